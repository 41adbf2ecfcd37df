/* ushmem extensions to OpenSHMEM. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#endif
