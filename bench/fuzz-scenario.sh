#!/usr/bin/env bash
# The scenario parser's fuzzer, as before bench/fuzz.sh took a target: bench/fuzz-scenario.sh [SECONDS]
exec "$(dirname "$0")/fuzz.sh" scenario "$@"
