"""bench/suite/run.py with other Push/Pull sizes for the core's row (the suite's are 64 B, 1 KiB,
64 KiB and 1 MiB; a lane takes up to 16 KiB): SZ=4096,16384 python3 sizes.py <run.py options>.
"""

import dataclasses
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "suite"))
import systems  # noqa: E402

SZ = tuple(int(x) for x in os.environ.get("SZ", "16384").split(","))
systems.SIZES = SZ
systems.SYSTEMS = tuple(
    dataclasses.replace(s, sizes=SZ) if s.key == "weida" else s for s in systems.SYSTEMS
)
import run  # noqa: E402

sys.exit(run.main())
