from ._data import *  # noqa
from ._intervals import accuracy  # noqa
from ._paired import *  # noqa
