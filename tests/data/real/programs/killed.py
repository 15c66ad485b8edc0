import os, signal
print("step 1 loss 2.0", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
