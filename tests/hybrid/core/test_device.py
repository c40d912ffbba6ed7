import numpy as np
import pytest
import torch

from hybrid.core.device import to_device


def test_lists_arrays_and_tensors_arrive_equal_on_the_cpu():
    assert torch.equal(to_device([3, 1, 2], "cpu"), torch.tensor([3, 1, 2]))
    assert to_device([3, 1, 2], "cpu").dtype == torch.int64
    mask = np.array([True, False])
    assert torch.equal(to_device(mask, torch.device("cpu")), torch.tensor([True, False]))
    weights = to_device(1.0 / np.array([3, 7]), "cpu", torch.float32)
    assert weights.dtype == torch.float32 and weights.tolist() == [float(np.float32(1 / 3)), float(np.float32(1 / 7))]


def test_half_precision_is_converted_from_the_exact_value():
    """bf16 weights come from the float64 value, as torch.tensor(python floats, dtype=bf16) gave them before."""
    values = [1.0 / n for n in range(1, 40)]
    assert torch.equal(to_device(np.array(values), "cpu", torch.bfloat16), torch.tensor(values, dtype=torch.bfloat16))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_cuda_copy_arrives_whole():
    values = np.arange(100_000)
    on = to_device(values, "cuda")
    assert on.device.type == "cuda" and torch.equal(on.cpu(), torch.as_tensor(values))
