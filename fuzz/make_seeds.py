#!/usr/bin/env python3
"""Writes the seed corpora of fuzz/corpus/<harness>/ (committed; rerun after
changing a harness's input format). Inputs come from the unit tests' examples
and the trace testdata; TRACE_DIR must hold `udiag convert` outputs of
src/record/tracedat/testdata/kernel_mono.dat: ctf/ (CTF) and udiag.dat.

  python3 fuzz/make_seeds.py TRACE_DIR
"""
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))


def seed(harness, name, data):
    d = os.path.join(ROOT, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def schema():
    record = struct.pack("<HBBi", 1000, 0, 0, 42) + struct.pack("<I", 5) + b"hello\0\0\0" + \
        struct.pack("<I", (6 << 16) | 24) + b"world\0"
    seed("schema_registration_fuzzer", "ints", "test u32 count; s64 delta; char c\0" + "x" * 16)
    seed("schema_registration_fuzzer", "array_loc", b"test u32 n; char[8] s; __data_loc char[] d\0" + record)
    seed("schema_registration_fuzzer", "rel_loc", "u:other char[20] msg; __rel_loc char[] data\0" + "a" * 40)
    seed("schema_registration_fuzzer", "struct", "u:s struct foo 16 f; unsigned int x")
    seed("schema_registration_fuzzer", "delete", "-:user_events/test u32 count")
    seed("schema_registration_fuzzer", "eventheader",
         "MyProvider_L5K1 u8 eventheader_flags;u8 version;u16 id;u16 tag;u8 opcode;u8 level")


def eventheader():
    common = bytes([0x2A, 0, 0, 0, 0x10, 0, 0, 0])
    metadata = b"MyEvent\0" + b"x\0" + bytes([4]) + b"msg\0" + bytes([7]) + b"v\0" + bytes([0x80 | 5, 3])
    payload = struct.pack("<I", 5) + b"hi\0" + struct.pack("<Q", 7)
    header = bytes([0x01 | 0x02 | 0x04, 0]) + struct.pack("<HHBB", 7, 0, 1, 4)
    ext = struct.pack("<HH", len(metadata), 1) + metadata
    seed("eventheader_fuzzer", "fields", common + header + ext + payload)
    activity = bytes(range(16))
    ext2 = struct.pack("<HH", 16, 2 | 0x8000) + activity + ext
    seed("eventheader_fuzzer", "activity", common + header + ext2 + payload)
    seed("eventheader_fuzzer", "no_metadata", common + bytes([0x03, 0]) + struct.pack("<HHBB", 0, 0, 0, 4) + b"\1\2")


def ipc():
    def msg(t, body):
        return struct.pack("<IIiI", t, 1, 0, 0) + body

    def text(s):
        return struct.pack("<I", len(s)) + s

    seed("ipc_protocol_fuzzer", "hello", msg(1, struct.pack("<IIi", 1, 1, 0)))
    seed("ipc_protocol_fuzzer", "register",
         msg(11, struct.pack("<HQBB", 0, 0x1000, 3, 4) + text(b"test u32 count")))
    seed("ipc_protocol_fuzzer", "inherit", msg(16, struct.pack("<I", 1) + struct.pack("<IQBB", 1000, 0x2000, 1, 4)))
    seed("ipc_protocol_fuzzer", "tree_write", msg(31, text(b"dynamic_events") + text(b"u:a u32 b") + bytes([1])))
    seed("ipc_protocol_fuzzer", "event_info", msg(100, struct.pack("<IBIII", 0, 1, 1000, 12, 1) + struct.pack("<IBB", 8, 0, 1)))


def ring():
    # Ring pages: a 16-byte header (time, then committed bytes | cpu << 32)
    # and events of a u32 word (type_len 4, the time delta above it) and 16
    # bytes of data: the common header (type 1, thread 1) and 8 bytes.
    def ring_page(start, cpu, deltas, fill=b"p"):
        body = b"".join(struct.pack("<I", 4 | d << 5) + struct.pack("<HBBi", 1, 0, 0, 1) + fill * 8 for d in deltas)
        return (struct.pack("<QQ", start, len(body) | cpu << 32) + body).ljust(4096, b"\0")

    def counters(head, mode):  # the lost counter's first bytes choose the reading
        return struct.pack("<QQQ", head, 0, mode)

    open_page = ring_page(1000, 1, [0, 9], b"A")[:16 + 40]
    seed("ring_reader_fuzzer", "two_events", counters(16 + 40, 0) + open_page)
    closed_and_open = ring_page(10, 1, [0, 3], b"C") + ring_page(20, 2, [0], b"D")[:16 + 20]
    seed("ring_reader_fuzzer", "closed_page_and_open_page", counters(4096 + 16 + 20, 7) + closed_and_open)
    # A closed page at time 100 and an open one at 200: pages whole in both
    # rounds, up to the time one page on (200).
    pages = ring_page(100, 0, [0, 5]) + ring_page(200, 1, [0, 50])[:16 + 40]
    seed("ring_reader_fuzzer", "pages_up_to_a_time", counters(4096 + 16 + 40, 0x010B) + pages)


def perfetto_recover():
    def packet(body):
        return b"\x0a" + bytes([len(body)]) + body

    two = packet(b"\x40\x01") + packet(b"\x5a" + bytes([3]) + b"abc")
    seed("perfetto_recover_fuzzer", "two_packets", two)
    seed("perfetto_recover_fuzzer", "torn", two[:-2])


def page_check():
    def page(start, events, commit=None):
        body = b"".join(events)
        return struct.pack("<QQ", start, len(body) if commit is None else commit) + body

    def event(delta, type_, payload):
        payload += b"\0" * (-len(payload) % 4)
        return struct.pack("<IHBBI", (8 + len(payload)) // 4 | delta << 5, type_, 0, 0, 7) + payload

    prefix = struct.pack("<QI", 1 << 20, 1 << 31)  # latest, half a ns per tick
    same = [event(0 if i == 0 else 300 + i, 10, bytes(range(i, i + 32))) for i in range(90)]
    seed("page_check_fuzzer", "one_size", prefix + page(1000, same))
    mixed = [event(0, 10, b"abcd"), event(5, 11, struct.pack("<I", 2 << 16) + b"x\0"),
             event(7, 12, b"abcd" + struct.pack("<I", (3 << 16) | 16) + b"xyz")]
    seed("page_check_fuzzer", "three_types", prefix + page(1000, mixed))
    extend = struct.pack("<II", 30 | (5 << 5), 1)
    seed("page_check_fuzzer", "time_extend",
         struct.pack("<QI", 1 << 30, 1 << 31) + page(1000, [event(0, 10, b"abcd"), extend, event(0, 10, b"efgh")]))


def tracefs():
    ops = ["adynamic_events\tu:test u32 count\nu:other char[20] msg; __rel_loc char[] data\n",
           "wevents/user_events/test/enable\t1\n", "aset_event\tuser_events:other\n",
           "minstances/foo", "winstances/foo/set_event\t*:*", "winstances/foo/tracing_on\t0",
           "wbuffer_size_kb\t64", "woptions/overwrite\t1", "Rtrace", "Rset_event",
           "Revents/user_events/test/format", "ruser_events_status", "rinstances/foo",
           "wdynamic_events\t!u:test u32 count"]
    seed("tracefs_write_fuzzer", "session", "\0".join(ops))
    seed("tracefs_write_fuzzer", "enable_all", "adynamic_events\tu:a\0wevents/enable\t1\0Rtrace\0wtrace\t")
    filters = ["adynamic_events\tu:req u32 status; __rel_loc char[] path\nu:tick u32 n\n",
               "wevents/user_events/req/filter\tstatus >= 500 && path ~ \"/api/*\"\n",
               "Revents/user_events/req/filter", "wevents/user_events/req/filter\tstats == 1",
               "Revents/user_events/req/filter", "wevents/user_events/filter\tn == 1",
               "Revents/user_events/tick/filter", "Revents/user_events/filter", "Rerror_log",
               "minstances/foo", "winstances/foo/events/user_events/req/filter\t(status == 1",
               "Rinstances/foo/error_log", "werror_log\t", "wevents/user_events/filter\t0"]
    seed("tracefs_write_fuzzer", "filters", "\0".join(filters))
    triggers = ["adynamic_events\tu:req u32 status; __rel_loc char[] path\nu:tick u32 n\n",
                "wevents/user_events/req/trigger\ttraceoff:3 if status >= 500\n",
                "aevents/user_events/req/trigger\tenable_event:user_events:tick:2",
                "aevents/user_events/req/trigger\thist:keys=path,status.log2:vals=status:sort=status.descending",
                "aevents/user_events/req/trigger\thist:keys=common_pid.execname:size=128:pause",
                "Revents/user_events/req/trigger", "Revents/user_events/req/hist", "Revents/user_events/tick/enable",
                "minstances/foo", "ainstances/foo/events/user_events/tick/trigger\tsnapshot:0x10",
                "rinstances/foo", "aevents/user_events/req/trigger\t!enable_event:user_events:tick",
                "wevents/user_events/req/trigger\t!traceon", "wdynamic_events\t!u:tick u32 n"]
    seed("tracefs_write_fuzzer", "triggers", "\0".join(triggers))


def traces(trace_dir):
    shutil.copy(os.path.join(ROOT, "..", "src/record/tracedat/testdata/kernel_mono.dat"),
                os.path.join(ROOT, "corpus", "tracedat_reader_fuzzer", "kernel_mono.dat"))
    shutil.copy(os.path.join(trace_dir, "udiag.dat"), os.path.join(ROOT, "corpus", "tracedat_reader_fuzzer", "udiag.dat"))
    ctf = os.path.join(trace_dir, "ctf")
    metadata = open(os.path.join(ctf, "metadata"), "rb").read()
    for stream in sorted(os.listdir(ctf)):
        if stream != "metadata":
            seed("ctf_reader_fuzzer", stream, metadata + b"\0" + open(os.path.join(ctf, stream), "rb").read())


def mmio():
    regs = struct.pack("<23Q", *([0x1000] * 23))
    for name, code in [("mov_load", "8b4710"), ("mov_store_imm", "c7471001000000"), ("lock_add", "f0014708"),
                       ("rep_movsb", "f3a4"), ("movdqu", "f30f6f07"), ("vmovdqu", "c5fe6f07"),
                       ("cmpxchg16b", "f0480fc70f"), ("push_mem", "ff7708")]:
        seed("mmio_decoder_fuzzer", name, bytes.fromhex(code).ljust(15, b"\x90") + regs)


def filters():
    args = "u32 status; int delta; char[16] name; __data_loc char[] path; __rel_loc char[] tag"
    # status=503 delta=-2 name="bash" path="/api/x" tag="hi"
    record = struct.pack("<HBBi", 1000, 0, 0, 42) + struct.pack("<Ii", 503, -2) + b"bash".ljust(16, b"\0") + \
        struct.pack("<II", (7 << 16) | 40, (3 << 16) | 7) + b"/api/x\0" + b"hi\0"
    for name, text in [("numbers", "status >= 500 && delta < 0 || status & 0x1"),
                       ("strings", "name == \"bash\" && path ~ \"/api/*\" && tag != 'x'"),
                       ("globs", "path ~ \"*pi*\" || path ~ \"/a?i/[a-z]\" || name ~ \"!ba*\""),
                       ("generic", "COMM ~ \"fuzz*\" && CPU != 3 && common_pid == 42"),
                       ("nested", "!(status == 1 || !(delta == -2)) && ((tag == \"hi\"))"),
                       ("errors", "((status == 1) || sattus == 2) && name == bash"),
                       ("function", "status.function == foo")]:
        seed("filter_parser_fuzzer", name, args.encode() + b"\0" + text.encode() + b"\0" + record)


if __name__ == "__main__":
    os.makedirs(os.path.join(ROOT, "corpus", "tracedat_reader_fuzzer"), exist_ok=True)
    schema()
    eventheader()
    ipc()
    ring()
    perfetto_recover()
    page_check()
    tracefs()
    traces(sys.argv[1])
    mmio()
    filters()
