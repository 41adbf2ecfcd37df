/* oshrun's gate in front of its PMIx server: only connections from
 * oshrun's own user reach the server library. */
#ifndef OSHRUN_GATE_H
#define OSHRUN_GATE_H

#include <stdbool.h>
#include <sys/types.h>

/* Sets the one uid whose connections are admitted (until then: oshrun's
 * effective uid) and whether each refusal is told, not only the first. */
void oshrun_gate_init(uid_t uid, bool debug);

/* How many connections the gate has admitted, and refused. */
unsigned long oshrun_gate_admitted(void);
unsigned long oshrun_gate_refused(void);

#endif
