"""The line a peer comparison prints to name the machine it ran on."""
import os
import platform


def describe_machine():
    """Host name, CPU model, logical CPU count and the 1-minute load average (a
    loaded machine makes wall times noisy)."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{platform.node()}: {model}, {os.cpu_count()} logical CPUs, "
            f"load average {os.getloadavg()[0]:.1f}")
