# SPDX-License-Identifier: Apache-2.0
"""Which board sits at which PCI address, from the identity lines the NVIDIA driver prints
before a GPU's first Xid:

    NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d
    NVRM: GPU Board Serial Number: 1650124014249

The serial line names no address: it belongs to the GPU announced just before it (within
``PAIR_LINES`` lines and ``PAIR_SECONDS`` seconds when both carry a time). When a GPU falls
off the bus the driver also prints 'NVRM: GPU 0000:9b:00.0: GPU serial number is <serial>.',
which names its address itself. A GPU that fell off the bus no longer answers nvidia-smi, so
these lines are where its serial survives for the RMA ticket.

Identity is not an event: it is read whatever the time window, like the UUID always was.
"""

from ..findings import normalize_pci
from .patterns import GPU_SERIAL_AT_RE, GPU_SERIAL_RE, GPU_UUID_RE, board_serial

PAIR_LINES = 4        # 'GPU at PCI' .. 'Board Serial Number': adjacent in every capture seen
PAIR_SECONDS = 1.0    # the same second (or raw dmesg seconds apart by less than this)
MAX_EARLIER = 4       # identities a PCI address had before (a board swapped within one log)


class GpuIdentities:
    """pci -> {"uuid", "serial"} from identity lines, fed in log order."""

    def __init__(self, max_keys):
        self.max_keys = max_keys
        self.table = {}
        self.unpaired = 0       # serial lines with no GPU announced just before them
        self._pending = None    # (pci, line number, time) of the last 'GPU at PCI' line

    def reset(self):
        """Another file begins: a serial never pairs with an announcement of another file."""
        self._pending = None

    def feed(self, ctx):
        """One NVRM line (ctx: line number, text, datetime or None, time or monotonic seconds).
        -> the PCI address it named, "" for a serial line it could not place, None when the
        line is no identity line."""
        line = ctx[1]
        m = GPU_UUID_RE.search(line)
        if m:
            pci = normalize_pci(m.group("pci"))
            self._announce(pci, m.group("uuid"))
            self._pending = (pci, ctx[0], _when(ctx))
            return pci
        m = GPU_SERIAL_RE.search(line)
        if m:
            pci = self._paired(ctx)
            if pci is None:
                self.unpaired += 1
                return ""
            self._set_serial(pci, m.group("serial"))
            return pci
        m = GPU_SERIAL_AT_RE.search(line)
        if m:
            pci = normalize_pci(m.group("pci"))
            self._set_serial(pci, m.group("serial"))
            return pci
        return None

    def _paired(self, ctx):
        p, self._pending = self._pending, None
        if p is None or not 0 < ctx[0] - p[1] <= PAIR_LINES:
            return None
        t = _when(ctx)
        if p[2] is not None and t is not None and type(p[2]) is type(t):
            gap = abs((t - p[2]).total_seconds()) if not isinstance(t, float) else abs(t - p[2])
            if gap > PAIR_SECONDS:
                return None
        return p[0]

    def _record(self, pci):
        rec = self.table.get(pci)
        if rec is None and len(self.table) < self.max_keys:
            rec = self.table[pci] = {"uuid": None, "serial": None, "earlier": []}
        return rec

    def _announce(self, pci, uuid):
        rec = self._record(pci)
        if rec is None:
            return
        if rec["uuid"] and rec["uuid"].lower() != uuid.lower():
            # another board at the same address (swapped, the log spans it): the last one is
            # the board there now; the earlier one is kept, named as such
            if len(rec["earlier"]) < MAX_EARLIER:
                rec["earlier"].append({"uuid": rec["uuid"], "serial": rec["serial"]})
            rec["serial"] = None
        rec["uuid"] = uuid

    def _set_serial(self, pci, raw):
        serial = board_serial(raw)
        rec = self._record(pci)
        if rec is not None and serial:  # '[N/A]' or '0' never hides a serial read before
            rec["serial"] = serial

    def get(self, pci):
        """{"uuid", "serial"} known for ``pci`` (both None when unknown)."""
        rec = self.table.get(pci) or {}
        return {"uuid": rec.get("uuid"), "serial": rec.get("serial")}

    def facts(self, pcis):
        """{pci: {"uuid", "serial"[, "earlier"]}} for every GPU address in ``pcis``."""
        out = {}
        for pci in sorted(set(pcis) | set(self.table)):
            ids = self.get(pci)
            earlier = (self.table.get(pci) or {}).get("earlier")
            if earlier:
                ids["earlier"] = [dict(e) for e in earlier]
            out[pci] = ids
        return out

    def ref(self, gpu):
        """A finding's ``gpu`` dict with its empty uuid / serial filled from what is known."""
        if not isinstance(gpu, dict) or not gpu.get("pci"):
            return gpu
        ids = self.get(gpu["pci"])
        if not gpu.get("uuid") and ids["uuid"]:
            gpu["uuid"] = ids["uuid"]
        if not gpu.get("serial") and ids["serial"]:
            gpu["serial"] = ids["serial"]
        return gpu


def _when(ctx):
    """The line's datetime, else its monotonic seconds (raw dmesg), else None."""
    if ctx[2] is not None:
        return ctx[2]
    return ctx[3] if isinstance(ctx[3], float) else None
