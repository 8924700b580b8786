#!/bin/sh
# A ptxas that rejects every input, naming the file as ptxas does.
for a; do f=$a; done
echo "ptxas $f, line 13; fatal   : Parsing error near x" >&2
exit 255
