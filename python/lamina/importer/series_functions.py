"""Special functions from Cephes' series and rational approximations (the coefficients
torch's own kernels use, so results agree to the last bits), composed of lamina ops like
special_functions.py: both targets get them with no new lowering. Computed in the result's
float type (f16/bf16 in f32); every branch is evaluated and the right one selected.

    i0e(x), i1e(x)   Chebyshev series on [0, 8] in x/2 - 2 and on (8, inf) in 32/x - 2 (Clenshaw);
                     i0(x) = exp|x| i0e(x), i1(x) = exp|x| i1e(x), in torch's order (i0(inf) = NaN)
    ndtri(p)         the inverse of the normal CDF: a rational function of p - 1/2 in the middle,
                     of 1/sqrt(-2 log p) in the tails; 0 -> -inf, 1 -> inf, outside [0, 1] NaN
    spherical_bessel_j0(x)   sin(x) / x, its Taylor series below |x| = 1/2
    bessel_j0/j1/y0/y1(x)    rational functions of x^2 up to 5 (j with its first two zeros
                     factored out, y plus 2/pi log(x) j(x)), Hankel's asymptotic form above
    modified_bessel_k0/k1(x), scaled_modified_bessel_k0/k1(x)   Chebyshev series in x^2 - 2
                     with log(x/2) I(x) below 2, in 8/x - 2 above (Cephes k0.c, k1.c)
"""
from __future__ import annotations

import math

from ..dialect import ops
from .aten_ops import cast, register
from .special_functions import _c, _compute_type, _poly, _polevl

# exp(-x) I0(x) on [0, 8], then exp(-x) sqrt(x) I0(x) on (8, inf): Chebyshev coefficients,
# highest order first (Cephes i0.c)
_I0E_A = [-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
          1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
          -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
          9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
          -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
          1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
          -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
          1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
          -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
          1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1]
_I0E_B = [-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
          3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
          1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
          -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
          7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
          -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
          3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
          2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
          8.04490411014108831608E-1]
# exp(-x) I1(x) / x on [0, 8], exp(-x) sqrt(x) I1(x) on (8, inf) (Cephes i1.c); float32 uses
# the last 17 and 7 terms (the others are below its precision), as torch's float kernel
_I1E_A = [2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
          -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
          3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
          -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
          9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
          -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
          4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
          -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
          2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
          -1.76416518357834055153E-1, 2.52587186443633654823E-1]
_I1E_B = [7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
          -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
          -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
          4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
          -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
          3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
          -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
          -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
          7.78576235018280120474E-1]
_F32_TERMS = {"i1e_a": 17, "i1e_b": 7}


def _chbevl(t, coefficients, et):
    """sum' c_k T_k(t/2) by Clenshaw's recurrence (Cephes chbevl: coefficients highest first)."""
    b0, b1, b2 = _c(coefficients[0], et), _c(0.0, et), None
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = ops.add(ops.sub(ops.mul(t, b1), b2), _c(c, et))
    return ops.mul(_c(0.5, et), ops.sub(b0, b2))


def _bessel_series(ax, a, b, et):
    """The two Chebyshev series at |x|: (|x| <= 8, the [0, 8] series (of exp(-x) I0(x), or of
    exp(-x) I1(x) / x), the (8, inf) series (of exp(-x) sqrt(x) I(x)))."""
    small = ops.le(ax, _c(8.0, et))
    inner = _chbevl(ops.sub(ops.div(ax, _c(2.0, et)), _c(2.0, et)), a, et)
    outer = _chbevl(ops.sub(ops.div(_c(32.0, et), ax), _c(2.0, et)), b, et)
    return small, inner, outer


def _tables(name, et):
    a, b = (_I0E_A, _I0E_B) if name == "i0" else (_I1E_A, _I1E_B)
    if str(et) == "f32" and name == "i1":
        a, b = a[-_F32_TERMS["i1e_a"]:], b[-_F32_TERMS["i1e_b"]:]
    return a, b


def _bessel(order: str, scaled: bool):
    def conv(imp, node, a):
        want, et = _compute_type(node)
        x = cast(a.self, et)
        ax = ops.abs(x)
        small, inner, outer = _bessel_series(ax, *_tables(order, et), et)
        if order == "i1":
            inner = ops.mul(inner, ax)
        if scaled:
            y = ops.where(small, inner, ops.div(outer, ops.sqrt(ax)))
        else:   # exp|x| times the series, in torch's order (exp(x) * series / sqrt(x))
            e = ops.exp(ax)
            y = ops.where(small, ops.mul(e, inner), ops.div(ops.mul(e, outer), ops.sqrt(ax)))
        if order == "i1":   # odd
            y = ops.where(ops.lt(x, _c(0.0, et)), ops.neg(y), y)
        return cast(y, want)
    return conv


register("aten.i0.default", "aten.special_modified_bessel_i0.default")(_bessel("i0", scaled=False))
register("aten.special_i0e.default")(_bessel("i0", scaled=True))
register("aten.special_i1.default", "aten.special_modified_bessel_i1.default")(_bessel("i1", scaled=False))
register("aten.special_i1e.default")(_bessel("i1", scaled=True))


# K0(x) + log(x/2) I0(x) on [0, 2] in x^2 - 2, and exp(x) sqrt(x) K0(x) on (2, inf) in 8/x - 2;
# for K1, x K1(x) - x log(x/2) I1(x) and exp(x) sqrt(x) K1(x) (Cephes k0.c, k1.c)
_K0_A = [1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
         1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
         1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
         -5.35327393233902768720e-01]
_K0_B = [5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
         2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
         -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
         2.44030308206595545468e+00]
_K1_A = [-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
         -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
         -3.53155960776544875667e-01, 1.52530022733894777053e+00]
_K1_B = [-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
         -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
         1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
         2.72062619048444266945e+00]


def _bessel_k(order: int, scaled: bool):
    """K0, K1 (modified Bessel functions of the second kind) and exp(x) K(x), as torch's
    modified_bessel_k*_forward: below 2 from the series of I (its [0, 8] one: exp(x) times
    it is I(x)), above from the scaled series; 0 -> inf, negatives NaN."""
    def conv(imp, node, a):
        want, et = _compute_type(node)
        x = cast(a.self if "self" in a else a.x, et)   # (the scaled ones name it x)
        two = _c(2.0, et)
        i_series = _chbevl(ops.sub(ops.div(x, two), two), _I0E_A if order == 0 else _I1E_A, et)
        i_x = ops.mul(ops.exp(x), i_series if order == 0 else ops.mul(i_series, x))
        log_half = ops.log(ops.mul(_c(0.5, et), x))
        near = _chbevl(ops.sub(ops.mul(x, x), two), _K0_A if order == 0 else _K1_A, et)
        near = ops.sub(near, ops.mul(log_half, i_x)) if order == 0 \
            else ops.add(ops.mul(log_half, i_x), ops.div(near, x))
        far = ops.div(_chbevl(ops.sub(ops.div(_c(8.0, et), x), two), _K0_B if order == 0 else _K1_B, et),
                      ops.sqrt(x))
        if scaled:
            near = ops.mul(near, ops.exp(x))
        else:
            far = ops.mul(ops.exp(ops.neg(x)), far)
        y = ops.where(ops.le(x, two), near, far)
        y = ops.where(ops.eq(x, _c(0.0, et)), _c(math.inf, et), y)
        y = ops.where(ops.lt(x, _c(0.0, et)), _c(math.nan, et), y)
        return cast(y, want)
    return conv


register("aten.special_modified_bessel_k0.default")(_bessel_k(0, scaled=False))
register("aten.special_modified_bessel_k1.default")(_bessel_k(1, scaled=False))
register("aten.special_scaled_modified_bessel_k0.default")(_bessel_k(0, scaled=True))
register("aten.special_scaled_modified_bessel_k1.default")(_bessel_k(1, scaled=True))

# ---- ndtri (Cephes ndtri.c) ---------------------------------------------------------------------

_NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0]
_NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4]
_NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9]
_EXP_M2 = 0.13533528323661269189   # exp(-2): the middle range's edge


@register("aten.special_ndtri.default")
def _ndtri(imp, node, a):
    want, et = _compute_type(node)
    p = cast(a.self, et)
    one = _c(1.0, et)
    upper = ops.gt(p, _c(1.0 - _EXP_M2, et))
    y = ops.where(upper, ops.sub(one, p), p)
    # middle: |p - 1/2| < 1/2 - exp(-2)
    m = ops.sub(y, _c(0.5, et))
    m2 = ops.mul(m, m)
    middle = ops.mul(ops.add(m, ops.mul(m, ops.div(ops.mul(m2, _polevl(m2, _NDTRI_P0, et)),
                                                    _polevl(m2, _NDTRI_Q0, et)))),
                     _c(math.sqrt(2 * math.pi), et))
    # tails: x = sqrt(-2 log y)
    x = ops.sqrt(ops.mul(_c(-2.0, et), ops.log(y)))
    x0 = ops.sub(x, ops.div(ops.log(x), x))
    z = ops.div(one, x)
    near = ops.div(ops.mul(z, _polevl(z, _NDTRI_P1, et)), _polevl(z, _NDTRI_Q1, et))
    far = ops.div(ops.mul(z, _polevl(z, _NDTRI_P2, et)), _polevl(z, _NDTRI_Q2, et))
    tail = ops.sub(x0, ops.where(ops.lt(x, _c(8.0, et)), near, far))
    tail = ops.where(upper, tail, ops.neg(tail))
    out = ops.where(ops.gt(y, _c(_EXP_M2, et)), middle, tail)
    out = ops.where(ops.eq(p, _c(0.0, et)), _c(-math.inf, et), out)
    out = ops.where(ops.eq(p, one), _c(math.inf, et), out)
    outside = ops.logical_or(ops.lt(p, _c(0.0, et)), ops.gt(p, one))
    out = ops.where(ops.logical_or(outside, ops.ne(p, p)), _c(math.nan, et), out)
    return cast(out, want)


# ---- spherical_bessel_j0 ------------------------------------------------------------------------

@register("aten.special_spherical_bessel_j0.default")
def _spherical_bessel_j0(imp, node, a):
    """sin(x) / x; below |x| = 1/2 its Taylor series (sum (-1)^k x^2k / (2k + 1)!, to x^12),
    exact at 0; 0 at +-inf, as eager."""
    want, et = _compute_type(node)
    x = cast(a.x, et)
    x2 = ops.mul(x, x)
    series = _poly(x2, [(-1) ** k / math.factorial(2 * k + 1) for k in range(7)], et)
    y = ops.where(ops.lt(ops.abs(x), _c(0.5, et)), series, ops.div(ops.sin(x), x))
    y = ops.where(ops.eq(ops.abs(x), _c(math.inf, et)), _c(0.0, et), y)
    return cast(y, want)


# ---- Bessel functions of the first and second kind, orders 0 and 1 (Cephes j0.c, j1.c) --------
# |x| <= 5: rational functions of x^2 (j: with the first two zeros factored out; y: plus the
# 2/pi log(x) j(x) term); above: Hankel's asymptotic form with rational amplitude and phase
# corrections in 25 / x^2. Coefficients highest power first.

_J0_PP = [7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01]
_J0_PQ = [9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00]
_J0_QP = [-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00]
_J0_QQ = [6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02]
_J0_RP = [-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15]
_J0_RQ = [4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18]
_Y0_YP = [1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
          -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
          4.42733268572569800351e+16, -1.84950800436986690637e+16]
_Y0_YQ = [1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
          8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
          2.50596256172653059228e+17]
_J1_PP = [7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00]
_J1_PQ = [5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01]
_J1_QP = [5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01]
_J1_QQ = [7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02]
_J1_RP = [-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15]
_J1_RQ = [6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18]
_Y1_YP = [1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
          -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17]
_Y1_YQ = [5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
          1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
          6.87141087355300489866e+16, 3.97270608116560655612e+18]
_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448


def _hankel(ax, order: int, second_kind: bool, et):
    """The asymptotic form above 5: sqrt(2 / (pi x)) (P cos(xn) - 5/x Q sin(xn)) for J,
    (P sin(xn) + 5/x Q cos(xn)) for Y, xn = x - (2 order + 1) pi / 4."""
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    w = ops.div(_c(25.0, et), ops.mul(ax, ax))
    p = ops.div(_polevl(w, pp, et), _polevl(w, pq, et))
    q = ops.mul(ops.div(_c(5.0, et), ax), ops.div(_polevl(w, qp, et), _polevl(w, qq, et)))
    xn = ops.sub(ax, _c((2 * order + 1) * math.pi / 4, et))
    c, s = ops.cos(xn), ops.sin(xn)
    body = ops.add(ops.mul(p, s), ops.mul(q, c)) if second_kind else ops.sub(ops.mul(p, c), ops.mul(q, s))
    return ops.div(ops.mul(body, _c(_SQRT_2_OVER_PI, et)), ops.sqrt(ax))


def _j_near(ax, order: int, et):
    z = ops.mul(ax, ax)
    if order == 0:
        r = ops.div(_polevl(z, _J0_RP, et), _polevl(z, _J0_RQ, et))
        zeros = ops.mul(ops.sub(z, _c(5.78318596294678452118, et)), ops.sub(z, _c(3.04712623436620863991e+01, et)))
        near = ops.mul(zeros, r)
        return ops.where(ops.lt(ax, _c(1e-5, et)), ops.sub(_c(1.0, et), ops.div(z, _c(4.0, et))), near)
    r = ops.div(_polevl(z, _J1_RP, et), _polevl(z, _J1_RQ, et))
    zeros = ops.mul(ops.sub(z, _c(1.46819706421238932572e+01, et)), ops.sub(z, _c(4.92184563216946036703e+01, et)))
    return ops.mul(ops.mul(r, ax), zeros)


def _bessel_j(order: int):
    def conv(imp, node, a):
        want, et = _compute_type(node)
        x = cast(a.self, et)
        ax = ops.abs(x)
        y = ops.where(ops.le(ax, _c(5.0, et)), _j_near(ax, order, et), _hankel(ax, order, False, et))
        if order == 1:   # odd
            y = ops.where(ops.lt(x, _c(0.0, et)), ops.neg(y), y)
        return cast(y, want)
    return conv


def _bessel_y(order: int):
    def conv(imp, node, a):
        want, et = _compute_type(node)
        x = cast(a.self, et)
        z = ops.mul(x, x)
        log_x = ops.log(x)
        if order == 0:
            near = ops.add(ops.div(_polevl(z, _Y0_YP, et), _polevl(z, _Y0_YQ, et)),
                           ops.mul(ops.mul(_c(_TWO_OVER_PI, et), log_x), _j_near(x, 0, et)))
        else:
            near = ops.add(ops.mul(x, ops.div(_polevl(z, _Y1_YP, et), _polevl(z, _Y1_YQ, et))),
                           ops.mul(_c(_TWO_OVER_PI, et),
                                   ops.sub(ops.mul(_j_near(x, 1, et), log_x), ops.div(_c(1.0, et), x))))
        y = ops.where(ops.le(x, _c(5.0, et)), near, _hankel(x, order, True, et))
        y = ops.where(ops.eq(x, _c(0.0, et)), _c(-math.inf, et), y)
        y = ops.where(ops.lt(x, _c(0.0, et)), _c(math.nan, et), y)
        return cast(y, want)
    return conv


register("aten.special_bessel_j0.default")(_bessel_j(0))
register("aten.special_bessel_j1.default")(_bessel_j(1))
register("aten.special_bessel_y0.default")(_bessel_y(0))
register("aten.special_bessel_y1.default")(_bessel_y(1))
