"""A PCI domain of 0x10000 or more keeps its full domain (a cut to 4 digits names another GPU)."""
from module_utils.gpu_runbook.findings import normalize_pci


def test_eight_digit_zero_domain_is_four_digits():
    assert normalize_pci("00000000:3B:00.0") == "0000:3b:00.0"


def test_wide_domain_keeps_all_digits():
    assert normalize_pci("00010000:3b:00.0") == "10000:3b:00.0"
    assert normalize_pci("00010000:3b:00.0") != normalize_pci("00000000:3b:00.0")


def test_wide_domain_same_gpu_same_key_in_both_spellings():
    assert normalize_pci("10000:3B:00.0") == normalize_pci("00010000:3b:00.0")
