import ctypes, sys
print("step 1 loss 2.0", flush=True)
print("step 2 loss 1.0", flush=True)
ctypes.string_at(0)
