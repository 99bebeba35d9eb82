import logging


class _Logger(logging.LoggerAdapter):
    def info_once(self, msg, *args, **kwargs):
        self.info(msg, *args)

    def warning_once(self, msg, *args, **kwargs):
        self.warning(msg, *args)


def init_logger(name):
    return _Logger(logging.getLogger(name), {})
