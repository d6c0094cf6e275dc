# SPDX-License-Identifier: Apache-2.0
"""Categories, severities and the ``kind()`` constructor the domain tables use."""

from .rungs import RUNG_RANK

SEVERITIES = ("ok", "info", "warning", "critical")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
SEVERITY_LABEL = {
    "en": {"ok": "ok", "info": "info", "warning": "warning", "critical": "critical"},
    "ko": {"ok": "정상", "info": "정보", "warning": "경고", "critical": "심각"},
}

# category: (en label, ko label)
_CATEGORY_ROWS = (
    ("healthy", "healthy", "정상"),
    ("gpu_hardware", "GPU hardware", "GPU 하드웨어"),
    ("driver", "GPU driver", "GPU 드라이버"),
    ("ib_network", "InfiniBand network", "InfiniBand 네트워크"),
    ("nccl_config", "NCCL configuration", "NCCL 설정"),
    ("nccl_deadlock", "NCCL hang", "NCCL 교착"),
    ("application", "application", "애플리케이션"),
    ("dataloader", "DataLoader", "DataLoader"),
    ("memory_leak", "memory leak", "메모리 누수"),
    ("unknown", "unknown", "원인 불명"),
)
CATEGORIES = tuple(r[0] for r in _CATEGORY_ROWS)
CATEGORY_LABEL = {"en": {r[0]: r[1] for r in _CATEGORY_ROWS}, "ko": {r[0]: r[2] for r in _CATEGORY_ROWS}}


def kind(category, severity, rung, steps, en, ko, also=()):
    """One row of a kinds table, checked when the taxonomy is imported: a typo or a rung
    that contradicts the steps fails at import, in every test."""
    if category not in CATEGORIES or any(c not in CATEGORIES for c in also):
        raise ValueError("unknown category in %r / %r" % (category, also))
    if severity not in SEVERITIES:
        raise ValueError("unknown severity %r" % (severity,))
    # steps are checked against the rung in taxonomy/__init__.py, once every table (and the
    # steps a domain declares) is loaded
    if rung is not None and rung not in RUNG_RANK:
        raise ValueError("unknown rung %r" % (rung,))
    if rung is None and steps:
        raise ValueError("a kind whose rung is decided per finding has no fixed steps")
    return {"category": category, "severity": severity, "rung": rung,
            "steps": tuple(steps) if rung is not None else None,
            "categories": (category,) + tuple(also), "en": en, "ko": ko}
