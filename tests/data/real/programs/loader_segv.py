# A DataLoader worker crashes with SIGSEGV (a native decoder dereferencing NULL, made
# here with ctypes) while tqdm draws the epoch's progress bar on stderr.
import ctypes
import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class Images(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 37:
            ctypes.string_at(0)  # the decoder reads address 0
        return torch.full((3,), float(i))


if __name__ == "__main__":
    loader = DataLoader(Images(), batch_size=4, num_workers=2)
    total = 0.0
    for batch in tqdm(loader):
        total += batch.sum().item()
    print("sum", total)
