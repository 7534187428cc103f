"""Reading what a recording run of bench/run_bench.sh left in the results
directory: NAME.out (its producers' "written N" lines) and, for an
LTTng-UST session, NAME.stop (what `lttng stop` printed)."""
import os
import re


def written(out, name):
    """Events the producers of a run wrote."""
    with open(os.path.join(out, name + ".out")) as f:
        return sum(int(x) for x in re.findall(r"written (\d+)", f.read()))


def lttng_discarded(out, name):
    """Events an LTTng-UST session discarded. lttng-tools 2.13 may print the
    count of per-UID buffers with bit 63 set (seen with 8 producers); the
    rest of the number is the count, as the trace's size per event confirms."""
    with open(os.path.join(out, name + ".stop")) as f:
        m = re.search(r"(\d+) events? (?:were|was) discarded", f.read())
    return int(m.group(1)) & ((1 << 63) - 1) if m else 0
