#!/usr/bin/python3
"""Shrinks a trace-cmd v6 file to the format of one event.

Copies the header texts, the chosen event's format, the saved cmdlines,
options, the cpu pages and the trace clock byte for byte; drops ftrace
formats, other events, kallsyms and printk formats. Used once to make
kernel_mono.dat from a real kernel recording (see README).
Usage: trim_kernel_dat.py IN.dat OUT.dat SYSTEM EVENT
"""
import struct
import sys


def main():
    src, dst, keep = sys.argv[1], sys.argv[2], sys.argv[3].encode()
    event = b'name: ' + sys.argv[4].encode() + b'\n'
    data = open(src, 'rb').read()
    pos = 0

    def take(n):
        nonlocal pos
        out = data[pos:pos + n]
        pos += n
        return out

    def u32():
        return struct.unpack('<I', take(4))[0]

    def u64():
        return struct.unpack('<Q', take(8))[0]

    def cstring():
        nonlocal pos
        end = data.index(b'\0', pos)
        out = data[pos:end]
        pos = end + 1
        return out

    out = bytearray()
    out += take(10)  # magic
    version = cstring()
    assert version == b'6', version
    out += version + b'\0'
    out += take(2)
    page_size = struct.unpack('<I', take(4))[0]
    out += struct.pack('<I', page_size)
    for _ in range(2):  # header_page, header_event
        out += cstring() + b'\0'
        size = u64()
        out += struct.pack('<Q', size) + take(size)
    for _ in range(u32()):  # ftrace formats: dropped
        take(u64())
    out += struct.pack('<I', 0)
    systems = []
    for _ in range(u32()):
        name = cstring()
        formats = [take(u64()) for _ in range(u32())]
        if name == keep:
            systems.append((name, [text for text in formats if text.startswith(event)]))
    out += struct.pack('<I', len(systems))
    for name, formats in systems:
        out += name + b'\0' + struct.pack('<I', len(formats))
        for text in formats:
            out += struct.pack('<Q', len(text)) + text
    take(u32())  # kallsyms
    take(u32())  # printk
    out += struct.pack('<II', 0, 0)
    size = u64()
    out += struct.pack('<Q', size) + take(size)  # cmdlines
    cpus = u32()
    out += struct.pack('<I', cpus)
    while True:
        tag = take(10)
        out += tag
        if tag == b'options  \0':
            while True:
                option = struct.unpack('<H', take(2))[0]
                out += struct.pack('<H', option)
                if option == 0:
                    break
                size = u32()
                out += struct.pack('<I', size) + take(size)
            continue
        assert tag == b'flyrecord\0', tag
        break
    table = [(u64(), u64()) for _ in range(cpus)]
    clock_size = u64()
    clock = take(clock_size)
    offset = len(out) + 16 * cpus + 8 + clock_size
    offset = (offset + page_size - 1) // page_size * page_size
    pages = bytearray()
    for cpu_offset, cpu_size in table:
        out += struct.pack('<QQ', offset + len(pages), cpu_size)
        pages += data[cpu_offset:cpu_offset + cpu_size]
    out += struct.pack('<Q', clock_size) + clock
    out += b'\0' * (offset - len(out))
    out += pages
    open(dst, 'wb').write(out)


if __name__ == '__main__':
    main()
