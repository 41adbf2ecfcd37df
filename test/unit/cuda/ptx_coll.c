/* Writes the cuda backend's small stream collective kernel
 * (src/device/cuda_coll.c) as the driver gets it, PTX on stdout, for
 * ptx_coll.sh to assemble with ptxas on machines without a GPU; with --pdl
 * its programmatic-launch form; with --amo the proxy's atomic kernel
 * (src/device/cuda_amo.c). */
#include <stdio.h>
#include <string.h>

#include "../../../src/device/cuda_private.h"

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "--pdl") != 0 && strcmp(argv[1], "--amo") != 0)) {
        fprintf(stderr, "usage: %s [--pdl | --amo]\n", argv[0]);
        return 2;
    }
    if (argc == 2 && strcmp(argv[1], "--amo") == 0)
        fputs(ushmemi_cuda_amo_ptx(), stdout);
    else
        fputs(ushmemi_cuda_coll_ptx(argc == 2), stdout);
    return 0;
}
