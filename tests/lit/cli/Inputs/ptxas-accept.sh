#!/bin/sh
# A ptxas that accepts every input and describes kernel k.
echo "ptxas info    : Compiling entry function 'k' for 'sm_90a'" >&2
echo "ptxas info    : Used 9 registers" >&2
