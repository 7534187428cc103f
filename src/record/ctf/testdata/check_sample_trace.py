#!/usr/bin/python3
"""Checks the CTF sample trace (sample_trace.cc) with python3-bt2: event
names, the class of every payload field (kind, size, signedness, display
base), every value, the context and packet fields, the clock, the
environment (hostname, cpus, thread names) and the discarded-event counts. Prints "sample trace OK" and exits 0 when all hold;
raises (exit 1) at the first difference.

Usage: /usr/bin/python3 check_sample_trace.py TRACE_DIR
"""
import sys
import time

import bt2

DEC, HEX = bt2.IntegerDisplayBase.DECIMAL, bt2.IntegerDisplayBase.HEXADECIMAL


def sint(bits):
    return ("sint", bits, DEC)


def uint(bits, base=DEC):
    return ("uint", bits, base)


STRING = ("string",)
BYTES = ("bytes",)      # static array of 8-bit hex unsigned integers
SEQUENCE = ("sequence",)  # dynamic array of 8-bit hex unsigned integers

INTS_CLASSES = {
    "a_s64": sint(64), "a_u64": uint(64), "a_s32": sint(32), "a_u32": uint(32),
    "a_int": sint(32), "a_uint": uint(32), "a_s16": sint(16), "a_u16": uint(16),
    "a_short": sint(16), "a_ushort": uint(16), "a_s8": sint(8), "a_u8": uint(8),
    "a_char": sint(8), "a_uchar": uint(8),
}
DYNAMIC_CLASSES = {
    "msg": STRING, "rel_msg": STRING, "umsg": STRING, "urel": STRING,
    "blob_length": uint(16), "blob": SEQUENCE,
    "rel_blob_length": uint(16), "rel_blob": SEQUENCE,
}
CLASSES = {
    "user_events:ints": INTS_CLASSES,
    "user_events:arrays": {"name": STRING, "tag": STRING, "pos": BYTES},
    "user_events:dynamic": DYNAMIC_CLASSES,
    "user_events_multi:multi.1f": {"count": uint(32), "text": STRING},
    "user_events:empty": {},
    "user_events:names": {n: uint(32) for n in
                          ("count", "count_2", "string", "dup", "dup_2", "f9lives")},
}

BASE = 5000000000
# (timestamp, cpu, pid, tid, event name, payload)
EXPECTED_EVENTS = [
    (BASE + 1000, 1, 1000, 1001, "user_events:ints", {
        "a_s64": -5000000000, "a_u64": 2**64 - 1, "a_s32": -123456, "a_u32": 4000000000,
        "a_int": -7, "a_uint": 7, "a_s16": -300, "a_u16": 65000, "a_short": -2,
        "a_ushort": 2, "a_s8": -100, "a_u8": 200, "a_char": 65, "a_uchar": 255}),
    (BASE + 2000, 0, 1000, 1000, "user_events:arrays", {
        "name": "hello", "tag": "abc", "pos": [1, 2, 3, 4, 5, 6]}),
    (BASE + 3000, 0, 1000, 1000, "user_events:dynamic", {
        "msg": "data loc", "rel_msg": "rel loc", "umsg": "unsigned", "urel": "",
        "blob_length": 4, "blob": [0xde, 0xad, 0xbe, 0xef],
        "rel_blob_length": 2, "rel_blob": [0x00, 0x7f]}),
    (BASE + 4000, 1, 2000, 2000, "user_events_multi:multi.1f", {
        "count": 42, "text": "multi format"}),
    (BASE + 5000, 1, 2000, 2000, "user_events:empty", {}),
    (BASE + 6000, 0, 1000, 1001, "user_events:names", {
        "count": 1, "count_2": 2, "string": 3, "dup": 4, "dup_2": 5, "f9lives": 6}),
    (BASE + 7000, 0, 2000, 2000, "user_events_multi:multi.1f", {
        "count": 43, "text": "same time, other cpu"}),
    (BASE + 7000, 1, 1000, 1000, "user_events:dynamic", {
        "msg": "", "rel_msg": "x", "umsg": "y", "urel": "z",
        "blob_length": 0, "blob": [], "rel_blob_length": 1, "rel_blob": [0xff]}),
]
# (cpu, count): Record::lost_before on cpu 0 and 1, then lost_at_end on cpu 0.
EXPECTED_DISCARDED = [(0, 2), (1, 3), (0, 4)]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def field_class_kind(fc):
    if isinstance(fc, bt2._SignedIntegerFieldClassConst):
        return ("sint", fc.field_value_range, fc.preferred_display_base)
    if isinstance(fc, bt2._UnsignedIntegerFieldClassConst):
        return ("uint", fc.field_value_range, fc.preferred_display_base)
    if isinstance(fc, bt2._StringFieldClassConst):
        return STRING
    element = getattr(fc, "element_field_class", None)
    byte_elements = (isinstance(element, bt2._UnsignedIntegerFieldClassConst)
                     and element.field_value_range == 8
                     and element.preferred_display_base == HEX)
    if isinstance(fc, bt2._StaticArrayFieldClassConst) and byte_elements:
        return BYTES
    if isinstance(fc, bt2._DynamicArrayFieldClassConst) and byte_elements:
        return SEQUENCE
    return ("unexpected", type(fc).__name__)


def check_classes(event_class):
    expected = CLASSES[event_class.name]
    payload = event_class.payload_field_class
    names = [member.name for member in payload.values()] if payload is not None else []
    check(names == list(expected), f"{event_class.name}: fields {names}")
    for member in (payload.values() if payload is not None else []):
        got = field_class_kind(member.field_class)
        check(got == expected[member.name], f"{event_class.name}.{member.name}: {got}")


def value_of(field):
    if isinstance(field, bt2._ArrayFieldConst):
        return [int(element) for element in field]
    if isinstance(field, bt2._StringFieldConst):
        return str(field)
    return int(field)


def main(trace_dir):
    events, discarded = [], []
    checked_classes = set()
    clock = trace = None
    for msg in bt2.TraceCollectionMessageIterator(trace_dir):
        if isinstance(msg, bt2._DiscardedEventsMessageConst):
            discarded.append((msg.stream.name, msg.count))
            continue
        if not isinstance(msg, bt2._EventMessageConst):
            continue
        event = msg.event
        if event.cls.name not in checked_classes:
            check_classes(event.cls)
            checked_classes.add(event.cls.name)
        context = event.common_context_field
        payload = event.payload_field
        values = {name: value_of(payload[name]) for name in payload} if payload is not None else {}
        events.append((msg.default_clock_snapshot.value, int(event.packet.context_field["cpu_id"]),
                       int(context["pid"]), int(context["tid"]), event.cls.name, values))
        check(int(context["common_flags"]) == 0 and int(context["common_preempt_count"]) == 0,
              "common header fields")
        clock = msg.default_clock_snapshot.clock_class
        trace = event.stream.trace
    check(checked_classes == set(CLASSES), f"event classes seen: {sorted(checked_classes)}")
    for got, want in zip(events, EXPECTED_EVENTS):
        check(got == want, f"event {got} != {want}")
    check(len(events) == len(EXPECTED_EVENTS), f"{len(events)} events")

    stream_cpu = {f"stream_{cpu}": cpu for cpu in range(3)}
    got_discarded = [(stream_cpu[name.rsplit("/", 1)[-1]], count) for name, count in discarded]
    check(got_discarded == EXPECTED_DISCARDED, f"discarded {got_discarded}")

    # The clock counts CLOCK_MONOTONIC ns; its offset makes them wall-clock times.
    check(clock.name == "monotonic" and clock.frequency == 10**9, "clock class")
    offset_ns = clock.offset.seconds * 10**9 + clock.offset.cycles
    expected_offset_ns = (time.time() - time.monotonic()) * 1e9
    check(abs(offset_ns - expected_offset_ns) < 60e9, f"clock offset {offset_ns}")
    check(str(trace.environment["hostname"]) == "sample-host", "hostname")
    check(int(trace.environment["cpus"]) == 3, "cpus")
    # Thread names; what a TSDL string cannot hold shows as '_'.
    comms = {key: str(value) for key, value in trace.environment.items() if key.startswith("comm_")}
    check(comms == {"comm_1000": "main", "comm_1001": "worker", "comm_2000": "other _app_%"},
          f"thread names {comms}")
    print("sample trace OK")


if __name__ == "__main__":
    main(sys.argv[1])
