"""The provenance stamp every dmuon tool writes: core/io/provenance.cpp's twin for the Python tools.

A figure is only worth its command, machine and date; the C++ tools and these scripts stamp the
files they write the same way, so a report can cite any of them alike:
  {"command": "<the command as typed>", "date": "YYYY-MM-DD HH:MM:SS UTC",
   "host": "<hostname>, <CPU model>, <n> logical CPUs"}
"""
import datetime
import os
import socket
import sys


def utc_now():
    """"2026-11-23 11:02:05 UTC": the one date format of every file a tool writes."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def command_line(argv=None, launcher="python3"):
    """The command as typed: `launcher` (e.g. "torchrun --nproc-per-node 2") and argv."""
    return " ".join([launcher] + list(sys.argv if argv is None else argv))


def host_description():
    """The host a figure was taken on (GPU machines are lent per call and their hosts differ)."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{socket.gethostname()}, {cpu}, {os.cpu_count()} logical CPUs"


def stamp(argv=None, launcher="python3"):
    """{"command", "date", "host"}: the provenance keys of every JSON file a tool writes."""
    return {"command": command_line(argv, launcher), "date": utc_now(), "host": host_description()}
