"""The figures of a `/usr/bin/time -v` report, for the benchmark scripts."""
import re


def read(path):
    """(wall seconds, CPU seconds, peak RSS in kB) of the report at `path`."""
    t = open(path).read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+(?:\.\d+)?)$", t, re.M)
    seconds = float(wall.group(1) or 0) * 60 + float(wall.group(2))
    cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", t).group(1))
              for k in ("User", "System"))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    return seconds, cpu, rss
