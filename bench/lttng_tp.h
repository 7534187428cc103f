/* LTTng-UST tracepoint provider for peer_bench: one event with a 32-byte
 * payload (four u64), the same payload udiag_bench writes. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER udiag_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(UDIAG_BENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define UDIAG_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

TRACEPOINT_EVENT(
    udiag_bench, payload32,
    TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, uint64_t, d),
    TP_FIELDS(
        ctf_integer(uint64_t, a, a)
        ctf_integer(uint64_t, b, b)
        ctf_integer(uint64_t, c, c)
        ctf_integer(uint64_t, d, d)))

#endif /* UDIAG_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
