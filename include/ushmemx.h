/* Intel SHMEM's <ishmemx.h> under its ushmem name: the ushmemx_ calls
 * (work-group forms among them) are declared with the rest by <ushmem.h>. */
#ifndef USHMEMX_H
#define USHMEMX_H

#include <ushmem.h>

#endif /* USHMEMX_H */
