"""``cupyx.scipy.special`` of the stand-in: the functions cupyx 13 has, computed by scipy on device arrays. The
general-order Bessel functions ``iv``, ``jv``, ``kv``, ``yv`` (and their scaled forms) are absent, as in cupyx."""

import scipy.special as _special

from cupy import _function

_NAMES = """erf erfc erfcx erfinv erfcinv gamma gammaln loggamma digamma polygamma multigammaln beta betaln zeta
i0 i0e i1 i1e j0 j1 y0 y1 k0 k0e k1 k1e expit logit log_expit ndtr ndtri log_ndtr logsumexp softmax log_softmax
xlogy xlog1py entr rel_entr kl_div huber pseudo_huber gammainc gammaincc gammaincinv gammainccinv exp1 expi expn
sinc boxcox boxcox1p inv_boxcox inv_boxcox1p ellipk ellipkm1 lpmv sph_harm spherical_yn bdtr bdtrc bdtri
chdtr chdtrc chdtri pdtr pdtrc pdtri btdtr btdtri ndtri_exp wright_bessel""".split()
for _name in _NAMES:
    if hasattr(_special, _name):
        globals()[_name] = _function(_name, getattr(_special, _name))
