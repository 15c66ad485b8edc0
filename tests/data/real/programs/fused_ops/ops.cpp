#include <torch/extension.h>
#include "fused_kernels.h"
int add(int a, int b) { return a + b; }
