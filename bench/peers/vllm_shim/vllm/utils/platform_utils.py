import re


def get_device_name_as_file_name(device_id=0):
    from vllm.platforms import current_platform

    return re.sub(r"[\s/]+", "_", current_platform.get_device_name(device_id))
