#!/usr/bin/env python3
"""Runs a test program with WAYLAND_DISPLAY pointing at a private headless Weston."""
import os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston

with Weston() as w:
    sys.exit(subprocess.run(sys.argv[1:], env=dict(os.environ, **w.env())).returncode)
