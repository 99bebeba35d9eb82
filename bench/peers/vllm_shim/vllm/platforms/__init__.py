import torch


class _CudaPlatform:
    def is_xpu(self):
        return False

    def is_cpu(self):
        return False

    def is_cuda(self):
        return True

    def is_rocm(self):
        return False

    def get_device_name(self, device_id=0):
        return torch.cuda.get_device_name(device_id)

    def get_device_capability(self, device_id=0):
        return torch.cuda.get_device_capability(device_id)


current_platform = _CudaPlatform()
