/* A call ushmem does not offer must fail to compile, naming the call. */
#include <nvshmemx.h>

int main(void)
{
    nvshmem_init();
    nvshmemx_qp_create(1, 0);
    nvshmem_finalize();
    return 0;
}
