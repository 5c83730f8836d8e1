import pytest


def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


HAS_CUDA = _cuda()


@pytest.fixture
def no_cuda():
    if HAS_CUDA:
        pytest.skip("this test describes a machine without CUDA")
