/* Instantiates the probes of lttng_tp.h (compiled as C, once). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "lttng_tp.h"
