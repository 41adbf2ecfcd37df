/* Writes the cuda backend's stream reduction kernels (src/device/cuda_sum.c)
 * as the driver gets them, PTX on stdout, for ptx_reduce_check.py to
 * assemble with ptxas and run in its PTX interpreter, on machines without a
 * GPU. With --launches: one line per (op, kind) pair the backend takes,
 * "op kind kernel code per", the kernel and arguments it launches. With
 * --coll-offsets: "name offset" for each argument of the kernels' one-kernel
 * forms, where they read it in their parameter block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/device/cuda_private.h"

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--launches") == 0) {
        for (int op = 0; op < USHMEMI_REDUCE_OPS; op++) {
            for (int kind = 0; kind < USHMEMI_REDUCE_KINDS; kind++) {
                unsigned code, per;
                const char *kernel = ushmemi_cuda_reduce_kernel(op, kind, &code, &per);
                if (kernel != NULL)
                    printf("%s %s %s %u %u\n", ushmemi_reduce_op_name(op),
                           ushmemi_reduce_kind_name(kind), kernel, code, per);
            }
        }
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--coll-offsets") == 0) {
        printf("p_dst %d\np_nsrc %d\np_count %d\np_op %d\n", USHMEMI_CUDA_COLL_AT_DST,
               USHMEMI_CUDA_COLL_AT_NSRC, USHMEMI_CUDA_COLL_AT_COUNT, USHMEMI_CUDA_COLL_AT_OP);
        for (int s = 0; s < USHMEMI_STREAM_REDUCE_SOURCES; s++)
            printf("p_s%d %d\n", s, USHMEMI_CUDA_COLL_AT_SRC + 8 * s);
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [--launches | --coll-offsets]\n", argv[0]);
        return 2;
    }
    size_t len = 0;
    char *ptx = ushmemi_cuda_reduce_ptx(&len);
    if (ptx == NULL) {
        fprintf(stderr, "ushmemi_cuda_reduce_ptx failed\n");
        return 1;
    }
    fwrite(ptx, 1, len, stdout);
    free(ptx);
    return 0;
}
