"""kael.utils.data: torch.utils.data's datasets, samplers, collation and DataLoader, for
feeding kael models batches as PyTorch programs do. Shuffling draws from kael's generators
(the orders are kael's, not torch's, for the same seed)."""

from kael.utils.data.collate import default_collate, default_convert
from kael.utils.data.dataloader import DataLoader, get_worker_info
from kael.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from kael.utils.data.distributed import DistributedSampler
from kael.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
    "default_convert", "get_worker_info", "random_split",
]  # fmt: skip
