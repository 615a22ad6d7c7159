#!/bin/sh
# Replay fidelity benchmark (issue 12): see fidelity.py's docstring.
exec python3 "$(dirname "$0")/fidelity.py" "$@"
