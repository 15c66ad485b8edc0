import logging
from rich.logging import RichHandler
from rich.traceback import install
install(width=100)
logging.basicConfig(level="INFO", format="%(message)s", handlers=[RichHandler(show_time=False, show_path=False)])
log = logging.getLogger("train")

def load_batch(step, sizes):
    if step == 3:
        raise ValueError(f"Expected input batch_size ({sizes[0]}) to match target batch_size ({sizes[1]}).")
    return sizes

def train():
    for step in range(1, 6):
        load_batch(step, (32, 16 if step == 3 else 32))
        log.info("step %d/5 loss %.3f", step, 2.0 / step)

train()
