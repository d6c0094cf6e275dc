# SPDX-License-Identifier: Apache-2.0
"""gpu-runbook engine: pure parsers, findings, verdicts and the offline CLI.

Importable two ways with the same code: as ``ansible.module_utils.gpu_runbook`` inside
an Ansible module payload (found through ``module_utils`` in ansible.cfg) and as the
installed ``gpu_runbook`` package (``pip install .``) used by the CLI and the tests.
Modules inside this package therefore use relative imports only.
"""

__version__ = "0.1.0"
