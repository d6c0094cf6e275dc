# SPDX-License-Identifier: Apache-2.0
"""PCIe AER lines: the report's header (who reported, how severe, which device below the
port) and its detail lines, counted per class and address (the scanner's ``_aer``)."""

from ..findings import normalize_pci
from .patterns import AER_CLASS, AER_DEV_RE, AER_RE, AER_SEV_RE, PCI_FULL_RE


def read_aer(sc, ctx):
    """One line holding 'AER:' (or its detail), read into the scanner ``sc`` (a method of
    KernelLogScanner kept in a file of its own; it uses the scanner's tables)."""
    line = ctx[1]
    surprise = "Surprise Down" in line or "SDES" in line
    dm = AER_DEV_RE.search(line)
    if dm:  # 'nvidia 0000:03:00.0: AER: can't recover': the device below the port that reported
        dev = normalize_pci(dm.group("pci"))
        (sc._gpu if dm.group("drv") == "nvidia" else sc._hca)(dev)
        h = sc._aer_header
        if h is not None and 0 <= ctx[0] - h[0] <= 12 and h[2] is not None and dev != h[1]:
            h[2].setdefault("below", dev)
    m = AER_RE.search(line)
    if m:
        sev, src = m.group("sev"), m.group("src")
    else:
        # Detail lines ('PCIe Bus Error: severity=..', '[ 5] SDES') repeat the header just
        # above them; they count only for what they add (Surprise Down) or when alone.
        near = sc._aer_header is not None and 0 < ctx[0] - sc._aer_header[0] <= 8
        m = AER_SEV_RE.search(line)
        if near:
            if not surprise:
                return
            src = sc._aer_header[1]
        elif not m and not surprise:
            return  # 'AER: enabled with IRQ ..' and other boot chatter
        else:
            src = None
        sev = m.group("sev") if m else "Uncorrected (Fatal)"
    cls = "surprise_down" if surprise else AER_CLASS.get(sev, "fatal")
    if not src:
        pm = PCI_FULL_RE.findall(line)
        src = pm[-1] if pm else None
    pci = normalize_pci(src) if src else None
    ok = sc._in_window(ctx)
    rec = sc._bump(sc._aer, (cls, pci), ctx, cls=cls, pci=pci) if ok else None
    if AER_RE.search(line):
        sc._aer_header = (ctx[0], pci, rec)
    if ok:
        sc._event(ctx, "pcie_aer_" + cls)
