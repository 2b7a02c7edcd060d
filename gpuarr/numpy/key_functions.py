"""jnp's shape and selection functions as gpuarr.numpy exports them: each also takes typed key
arrays (run on the keys' raw data by `key_arrays.accepting_keys`), and `array`/`asarray` pass
a key array through. Code that may hold key arrays (gpuarr.prng, gpuarr.random) calls these."""
from __future__ import annotations

import operator

from gpuarr.numpy import comparisons, creation, manipulation, reductions, selection, ufuncs
from gpuarr.numpy.key_arrays import accepting_key_arrays, accepting_keys, comparing_keys, on_key_data
from gpuarr.prng import PRNGKeyArray, _KeyIndexed

append = accepting_keys(manipulation.append)
array_split = accepting_keys(manipulation.array_split)
atleast_1d = accepting_keys(manipulation.atleast_1d)
atleast_2d = accepting_keys(manipulation.atleast_2d)
atleast_3d = accepting_keys(manipulation.atleast_3d)
broadcast_arrays = accepting_keys(manipulation.broadcast_arrays)
broadcast_to = accepting_keys(manipulation.broadcast_to)
concat = accepting_keys(manipulation.concat)
concatenate = accepting_keys(manipulation.concatenate)
delete = accepting_keys(manipulation.delete)
dsplit = accepting_keys(manipulation.dsplit)
expand_dims = accepting_keys(manipulation.expand_dims)
flip = accepting_keys(manipulation.flip)
fliplr = accepting_keys(manipulation.fliplr)
flipud = accepting_keys(manipulation.flipud)
hsplit = accepting_keys(manipulation.hsplit)
hstack = accepting_keys(manipulation.hstack)
insert = accepting_keys(manipulation.insert)
matrix_transpose = accepting_keys(manipulation.matrix_transpose)
moveaxis = accepting_keys(manipulation.moveaxis)
permute_dims = accepting_keys(manipulation.permute_dims)
ravel = accepting_keys(manipulation.ravel)
repeat = accepting_keys(manipulation.repeat)
reshape = accepting_keys(manipulation.reshape)
roll = accepting_keys(manipulation.roll)
rot90 = accepting_keys(manipulation.rot90)
split = accepting_keys(manipulation.split)
squeeze = accepting_keys(manipulation.squeeze)
stack = accepting_keys(manipulation.stack)
swapaxes = accepting_keys(manipulation.swapaxes)
tile = accepting_keys(manipulation.tile)
transpose = accepting_keys(manipulation.transpose)
unstack = accepting_keys(manipulation.unstack)
vsplit = accepting_keys(manipulation.vsplit)
vstack = accepting_keys(manipulation.vstack)
copy = accepting_keys(creation.copy)
diagonal = accepting_keys(creation.diagonal)
empty_like = accepting_keys(creation.empty_like)
zeros_like = accepting_keys(creation.zeros_like)
take = accepting_keys(selection.take)
take_along_axis = accepting_keys(selection.take_along_axis)
where = accepting_keys(ufuncs.where)
array = accepting_key_arrays(creation.array)
asarray = accepting_key_arrays(creation.asarray)
equal = comparing_keys(ufuncs.equal, operator.eq)
not_equal = comparing_keys(ufuncs.not_equal, operator.ne)


def array_equal(a1, a2, equal_nan=False):
    """True when both have the same shape and elements; key arrays compare key by key (no key
    is NaN), as in JAX."""
    if isinstance(a1, PRNGKeyArray) or isinstance(a2, PRNGKeyArray):
        if isinstance(a1, PRNGKeyArray) and isinstance(a2, PRNGKeyArray) and a1.shape != a2.shape:
            return creation.asarray(False)
        return reductions.all(equal(a1, a2))
    return comparisons.array_equal(a1, a2, equal_nan)


# The key array methods that are these functions (gpuarr.prng, below gpuarr.numpy, defines the
# class; its methods are filled in here).
def _set_keys(self, values):
    """`keys.at[idx].set(new_keys)`."""
    idx = self.idx
    return on_key_data(lambda data, new: data.at[idx].set(new), (self.keys, values), {})


PRNGKeyArray.squeeze = lambda self, axis=None: squeeze(self, axis)
PRNGKeyArray.swapaxes = lambda self, axis1, axis2: swapaxes(self, axis1, axis2)
PRNGKeyArray.take = lambda self, indices, axis=None, **kwargs: take(self, indices, axis, **kwargs)
_KeyIndexed.set = _set_keys
