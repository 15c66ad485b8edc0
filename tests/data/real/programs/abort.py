import os
print("step 1 loss 2.0", flush=True)
os.abort()
