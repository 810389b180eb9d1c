# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from .basil_server import FakeBasil


@pytest.fixture
def basil():
    with FakeBasil() as fake:
        yield fake


@pytest.fixture
def run_module(basil, capsys):
    """Run a module's main() with the given options (plus the connection to *basil*); its JSON result."""

    def run(module, check_mode=False, diff=False, **options):
        args = dict(basil_url=basil.url, basil_token="good-token")
        args.update(options)
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        return json.loads(capsys.readouterr().out)

    return run
