"""kael's vector math: transcendental functions as range reduction plus polynomials.

Emitted lane-generically through the ExprEmitter, so CPU loops stay vectorized (no
libm calls) and the GPU needs no libdevice; only intrinsics that every backend lowers
(fma, fabs, copysign, fdiv, integer ops and bit casts) are used. The main ranges are
branch-free (every lane computes each path and selects); far ranges that need much more
work (huge trigonometric arguments, gelu's far tail) run on a branch taken only when
some lane needs it (ExprEmitter.rarely).

On AVX-512 hosts and the GPU, float32 tanh, sigmoid and silu (sigmoid(-|x|)), gelu (x
Phi(x), Phi(-a) per quarter unit of |x| up to 7.25, then exp(-a^2/2) G(a)) and softplus
(max(x, 0) + log1p(exp(-|x|))) take those functions of |x| from piecewise tables, one
polynomial per unit of |x|: a table lookup per coefficient (vpermps, vpermi2ps for 32
rows, or a constant global in scalar and PTX code: the same bits in every layout and on
both), no exp, division or log; the far ranges and NaN take the exp forms on a rare
branch. AVX2 hosts keep the exp forms (faster there).

Polynomial coefficients are weighted minimax fits made by benchmarks/fit_vmath.py
(Lawson's algorithm against 40-digit mpmath references), lowest degree first; split
constants (ln2, pi/2 in two or three parts) are the precision's roundings of mpmath
values. float32 sin/cos/tan and pow run in float64 inside and round once.

Accuracy (tests/codegen/test_vmath.py measures it): exp, exp2, expm1, log, log2,
log1p, sin, cos, tanh, sigmoid, erf and pow within 2 ulp in both precisions, over every
finite input (erfc: 3 ulp in float64, 0.5 in float32 through float64, measured in
tests/frontend/test_special_math.py): sin/cos/tan reduce exactly up to the largest float
(trig_reduce.py), pow up to exp's overflow and underflow edges, silu and gelu_tanh keep
subnormal results, gelu's negative tail continues past erfc's polynomial (float64 gelu
between x = -6 sqrt 2 and -3 carries erf's absolute, not relative, accuracy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from kael.codegen import arith, trig_reduce
from kael.codegen.lowering import ExprEmitter, declare, targets_gpu, value_type_of_width
from kael.runtime.dtypes import DType, float32, float64

INF, NAN = float("inf"), float("nan")


@dataclass(frozen=True)
class _Format:
    """One IEEE binary format: integer width, mantissa bits, exponent bias."""

    bits: int
    mant: int
    bias: int

    @property
    def shifter(self) -> float:
        """1.5 * 2**mant: x + shifter - shifter rounds x to an integer (|x| < 2**(mant-1))."""
        return 1.5 * 2.0**self.mant

    @property
    def shifter_bits(self) -> int:
        return (self.bias + self.mant) << self.mant | 1 << (self.mant - 1)


_FORMATS = {float32: _Format(32, 23, 127), float64: _Format(64, 52, 1023)}


@dataclass(frozen=True)
class _Consts:
    """Per-precision constants; tuples are polynomial coefficients, lowest degree first."""

    ln2: tuple[float, float]  # ln 2 = hi + lo, each rounded to the precision
    log2e: float
    sqrt_half_bits: int  # the bits of sqrt(1/2): log's reduction boundary
    exp_lo: float  # exp(x) rounds to 0 below, to inf above
    exp_hi: float
    expm1_lo: float  # expm1(x) rounds to -1 below
    tanh_big: float  # tanh(|x|) rounds to 1 above: clamp of 2|x|
    tanh_small: float  # below: the odd polynomial
    erf_small: float  # below: the odd polynomial; above: 1 - exp(-x^2) G(x)
    erf_big: float  # erf rounds to +-1 above
    erf_center: float  # G is a polynomial in x - erf_center
    expm1_poly: tuple[float, ...]  # expm1(r) = r + r^2 P(r), |r| <= ln2/2
    log_poly: tuple[float, ...]  # log(1+f) = f - (f^2/2 - s (f^2/2 + z R(z))), z = s^2
    sin_poly: tuple[float, ...]  # sin(r) = r + r z S(z), |r| <= pi/4 (evaluated in float64)
    cos_poly: tuple[float, ...]  # cos(r) = 1 - z/2 + z^2 C(z)
    tanh_poly: tuple[float, ...]  # tanh(x) = x + x z T(z)
    erf_poly: tuple[float, ...]  # erf(x) = x + x E(z)
    erfc_poly: tuple[float, ...]  # erfc(a) = exp(-a^2) G(a - erf_center)
    # (float32: relative error in G, for gelu's tail; float64: absolute error in erf)
    erfc_far_poly: tuple[float, ...]  # erfc(a) = exp(-a^2) (1 + v K(v)) / (a sqrt pi), v = 1/a^2
    # (a > erf_big: gelu's far tail, relative error)


_C = {
    float32: _Consts(
        ln2=(0.6931471824645996, -1.9046542121259336e-09),
        log2e=1.4426950216293335,
        sqrt_half_bits=0x3F3504F3,
        exp_lo=-104.0,
        exp_hi=89.0,
        expm1_lo=-18.0,
        tanh_big=20.0,
        tanh_small=0.625,
        erf_small=0.921875,
        erf_big=4.0,
        erf_center=2.4609375,
        expm1_poly=(
            0.4999999701976776, 0.1666654348373413, 0.04166720062494278, 0.0083665382117033,
            0.001388251781463623,
        ),
        log_poly=(0.6666677594184875, 0.3997754156589508, 0.29871729016304016),
        sin_poly=(-0.16666655242443085, 0.008332173340022564, -0.00019516656175255775),
        cos_poly=(0.04166664555668831, -0.0013887309469282627, 2.443241282890085e-05),
        tanh_poly=(
            -0.3333328366279602, 0.13331490755081177, -0.05374349653720856,
            0.020650586113333702, -0.00571704376488924,
        ),
        erf_poly=(
            0.12837916612625122, -0.37612634897232056, 0.11283695697784424,
            -0.026859398931264877, 0.005201032385230064, -0.0008142704027704895,
            8.370100113097578e-05,
        ),
        erfc_poly=(
            0.21374909579753876, -0.07633283734321594, 0.02589871920645237,
            -0.008398670703172684, 0.0026152576319873333, -0.0007843885687179863,
            0.00022778102720621973, -6.496049172710627e-05, 1.7639662473811768e-05,
            -4.070650447829394e-06, 1.1024761761291302e-06, -4.919954221804801e-07,
            1.1505548513923713e-07,
        ),
        erfc_far_poly=(
            -0.49999865889549255, 0.7496819496154785, -1.849804401397705, 5.653144359588623,
            -12.910684585571289,
        ),
    ),
    float64: _Consts(
        ln2=(0.6931471805599453, 2.3190468138462996e-17),
        log2e=1.4426950408889634,
        sqrt_half_bits=0x3FE6A09E667F3BCD,
        exp_lo=-746.0,
        exp_hi=710.0,
        expm1_lo=-38.0,
        tanh_big=40.0,
        tanh_small=0.4,
        erf_small=0.921875,
        erf_big=6.0,
        erf_center=3.4609375,
        expm1_poly=(
            0.5, 0.16666666666666677, 0.04166666666666651, 0.00833333333332164,
            0.0013888888888960627, 0.00019841269886110708, 2.480158717565433e-05,
            2.7557244227919186e-06, 2.7557400207253226e-07, 2.5109027831249126e-08,
            2.0876016739391647e-09,
        ),
        log_poly=(
            0.6666666666666734, 0.39999999999414704, 0.28571428742380756, 0.22222198573951485,
            0.18183564283458242, 0.153140517034767, 0.14795937698201872,
        ),
        sin_poly=(
            -0.16666666666666632, 0.008333333333322314, -0.0001984126982972454,
            2.7557313661880106e-06, -2.5050753243495907e-08, 1.5896504052745953e-10,
        ),
        cos_poly=(
            0.041666666666666595, -0.0013888888888872884, 2.480158728874085e-05,
            -2.7557314146482763e-07, 2.087569628120995e-09, -1.1358295426812192e-11,
        ),
        tanh_poly=(
            -0.3333333333333333, 0.1333333333333266, -0.05396825396753569,
            0.021869488498272045, -0.00886323438037388, 0.00359210641737057,
            -0.0014555735564469525, 0.0005879988028050864, -0.00022922057314563293,
            6.868086191182881e-05,
        ),
        erf_poly=(
            0.1283791670955126, -0.3761263890318371, 0.11283791670952863, -0.02686617064463864,
            0.005223977619889329, -0.0008548326653224715, 0.00012055317290488302,
            -1.4925211066091207e-05, 1.6453870490395735e-06, -1.6262862158326553e-07,
            1.3979234722910257e-08, -8.329274549439379e-10,
        ),
        erfc_poly=(
            0.15692428632733188, -0.042168872687237, 0.010980453487605438,
            -0.0027774727871897422, 0.0006838976402470515, -0.00016421744820067214,
            3.8516344327424255e-05, -8.835747131615609e-06, 1.98137521025242e-06,
            -4.3976849580605034e-07, 9.346396499257483e-08, -1.996074717139562e-08,
            4.2880941883001576e-09, -8.781931324220311e-10, 1.5667776639761374e-10,
            -2.925655818080253e-11, 8.650364609696096e-12, -2.511274976018347e-12,
            9.834889537918799e-14, 1.9744564266930755e-13, 1.936991790401015e-14,
            -5.348845339692361e-14, -1.7532809358473947e-14, -2.0030705907388967e-15,
        ),
        erfc_far_poly=(
            -0.49999999999997036, 0.7499999999468355, -1.874999966941611, 6.562489782335778,
            -29.529423837842597, 162.21788779380785, -1040.9157510019643, 7205.2121967726725,
            -44635.2483211405, 165399.28770070817,
        ),
    ),
}  # fmt: skip

TWO_OVER_PI = 0.6366197723675814
# pow's ln 2 in two parts: a 32-bit head, so k * head is exact for |k| < 2**21.
LN2_HEAD, LN2_TAIL = 0.6931471803691238, 1.9082149292705877e-10
# pow's log tail: 2 atanh(s) = 2s + (2/3) s^3 + s^5 P(z), z = s^2, to 2**-66 of the log
# (degree 6, fit_vmath.py "pow", for 2/3 carried exactly: pow's error grows with |y ln x|).
POW_LOG_POLY = (
    0.40000000000002256, 0.28571428570099955, 0.2222222251984312, 0.18181784375018623,
    0.1538675692978136, 0.13256827884259623, 0.13196227999147422,
)  # fmt: skip
TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)  # 2/3 = hi + lo
SQRT_2_OVER_PI = 0.7978845608028654  # gelu_tanh: u = x (a + b x^2), b = a * 0.044715
GELU_TANH_CUBIC = 0.035677408136300125
SQRT_HALF = 0.7071067811865476
INV_SQRT_2PI = 0.3989422804014327
# kael.erfc (float64; float32 rounds once): erfc(a) = exp(-a^2) M(a - ERFC_CENTER) from
# erf_small to ERFC_SPLIT, then exp(-a^2) (1 + v K(v)) / (a sqrt pi), v = 1/a^2 (fit_vmath.py
# "erfc_mid64" and "erfc_tail64", relative error).
ERFC_SPLIT, ERFC_CENTER, SQRT_PI = 2.75, 1.8, 1.7724538509055159
ERFC_MID_POLY = (
    0.2785600956364385, -0.12556282280433384, 0.05254701458863772, -0.02065213102985786,
    0.007686589367443564, -0.002726508067368087, 0.0009262916154460185, -0.00030262376007399324,
    9.539221140145346e-05, -2.9092838519140995e-05, 8.605022372229382e-06, -2.4734236702878913e-06,
    6.921379991498129e-07, -1.8884238181083245e-07, 5.032568375068905e-08, -1.312652094182558e-08,
    3.3306479821697832e-09, -8.125429406514054e-10, 2.084575878829226e-10, -6.128565488522976e-11,
    1.2018591138178741e-11,
)  # fmt: skip
ERFC_TAIL_POLY = (
    -0.49999999999975514, 0.749999999724026, -1.8749998905406557, 6.562477891490549,
    -29.52857348079543, 162.2089982313437, -1043.9574754327116, 7446.005486249849,
    -53236.6671385526, 320458.3770971781, -1073271.798736299, -3917953.460169199,
    65263203.23379156, -120694154.55332786, -2584209480.018326, 13144561940.961176,
    97844646478.30919, -953951261493.5403, -2278571548054.906, 67179692756199.97,
    -393456332752078.25, 1057678371062691.6, -1140743494092154.2,
)  # fmt: skip
# silu and gelu_tanh's x e^-|u| (|u| >= |x|) stays representable up to |u| ~ -exp_lo + 7
# (silu(-109) = -2e-45 in float32): the logistic's exp reaches this far past exp's clamp.
LOGISTIC_REACH = 8.0

# The float32 tables (fit_vmath.py's TABLES): f(a) on a = k + t, k = rint(a), |t| <= 1/2,
# one degree-7 polynomial in t per k (16 rows: one AVX-512 register a coefficient), relative
# error within 0.9 eps. The logistic's is sigmoid(-a).
LOGISTIC_TABLE_REACH = 15.0  # k = rint(|x|) <= 15: the last row
LOGISTIC_TABLE32 = (
    (0.5, -0.25, 1.684283645886353e-08, 0.02083289809525013, 4.162219283898594e-06, -0.002102498197928071, 4.432364949025214e-05, 0.0001667460601311177),
    (0.2689414322376251, -0.1966119408607483, 0.045428041368722916, 0.005888191983103752, -0.005136517807841301, 0.0004184374993201345, 0.0003631955769378692, -8.938864630181342e-05),
    (0.11920291930437088, -0.10499358177185059, 0.03998148441314697, -0.00647549657151103, -0.0008690856047905982, 0.0007259048870764673, -0.0001355346175841987, -1.6596955902059563e-05),
    (0.04742587357759476, -0.045176658779382706, 0.020445752888917923, -0.0054885223507881165, 0.0007805966306477785, 4.1535233322065324e-05, -5.72254357393831e-05, 1.565047750773374e-05),
    (0.01798621006309986, -0.01766270585358143, 0.008513658307492733, -0.002631818875670433, 0.0005592381930910051, -7.469888078048825e-05, 6.108917318670137e-07, 2.6393499865662307e-06),
    (0.006692850962281227, -0.006648056674748659, 0.0032795309089124203, -0.001063810894265771, 0.0002515273226890713, -4.4670014176517725e-05, 5.503047759702895e-06, -2.3058197484715492e-07),
    (0.0024726232513785362, -0.0024665093515068293, 0.0012271489249542356, -0.00040499522583559155, 9.931074600899592e-05, -1.9116052499157377e-05, 2.7184808004676597e-06, -1.5682165610542143e-07),
    (0.0009110511746257544, -0.0009102211333811283, 0.00045428285375237465, -0.00015087719657458365, 3.742603075806983e-05, -7.35819185138098e-06, 1.2450660733520635e-06, -2.1253657678244053e-07),
    (0.00033535013790242374, -0.0003352376807015389, 0.00016750588838476688, -5.5759963288437575e-05, 1.3908068467571866e-05, -2.7716957902157446e-06, 4.4384236730365956e-07, -4.792333996306297e-08),
    (0.00012339458044152707, -0.0001233793591381982, 6.167413084767759e-05, -2.0547555322991684e-05, 5.135262654221151e-06, -1.0286356655342388e-06, 1.6197066088352585e-07, -1.333111487866745e-08),
    (4.539786823443137e-05, -4.539580550044775e-05, 2.2695880034007132e-05, -7.563990948256105e-06, 1.889842110358586e-06, -3.77055698663753e-07, 6.441383249011778e-08, -1.0730511590395508e-08),
    (1.6701422282494605e-05, -1.6701143977115862e-05, 8.350260941369925e-06, -2.783196805467014e-06, 6.960443101888814e-07, -1.3955741451354697e-07, 2.2416772438305088e-08, -2.186017811212082e-09),
    (6.144174676592229e-06, -6.144136932562105e-06, 3.0720257200300694e-06, -1.02397962109535e-06, 2.560306313625915e-07, -5.124830693148397e-08, 8.450002475512974e-09, -1.07299025220442e-09),
    (2.2603242086915998e-06, -2.26031920647074e-06, 1.1301613085379358e-06, -3.767185035030707e-07, 9.410053536385021e-08, -1.8783351762863276e-08, 3.3617248984540993e-09, -6.002292551876565e-10),
    (8.315280410897685e-07, -8.315273589687422e-07, 4.1576203102522413e-07, -1.385859889069252e-07, 3.4655958103257944e-08, -6.941162755680352e-09, 1.1357519369425972e-09, -1.3476937621437202e-10),
    (3.0590223332183086e-07, -3.0590214805670257e-07, 1.529505198050174e-07, -5.098292277239125e-08, 1.2750461131361135e-08, -2.5554998117627292e-09, 4.147685528366196e-10, -4.4944506449873245e-11),
)  # fmt: skip

# tanh's table (degree 8), its row at 0 without a constant: odd, so tanh(+-0) = +-0.
TANH_TABLE_REACH = 15.0
TANH_TABLE32 = (
    (0.0, 1.0, 9.285159308092261e-08, -0.33333873748779297, 0.00010734051465988159, 0.13230520486831665, 0.005415073595941067, -0.07035979628562927, 0.02772606909275055),
    (0.7615941762924194, 0.4199741780757904, -0.3198503255844116, 0.1036192923784256, 0.02771161124110222, -0.046564433723688126, 0.018928879871964455, 0.0039888001047074795, -0.0068189725279808044),
    (0.9640275835990906, 0.07065082341432571, -0.06810969114303589, 0.042108722031116486, -0.017885422334074974, 0.004790737293660641, -0.00019201448594685644, -0.0007279132842086256, 0.0005003134137950838),
    (0.9950547814369202, 0.009866037406027317, -0.009820777922868729, 0.006480005104094744, -0.003105087438598275, 0.0012192879803478718, -0.0008231893298216164, 8.673337288200855e-05, 0.0008878611261025071),
    (0.9993293285369873, 0.0013409506063908339, -0.0013437193119898438, 0.0008921738481149077, -0.0003716273931786418, 0.00017692110850475729, -0.0005268245004117489, 1.6741429135436192e-05, 0.0009323746198788285),
    (0.9999092221260071, 0.000181583222001791, -0.00018384224676992744, 0.00012102318578399718, -1.5038622223073617e-05, 2.4166753064491786e-05, -0.00029870003345422447, 2.3593511286890134e-06, 0.0005803660023957491),
    (0.9999877214431763, 2.457654773024842e-05, -2.5823648684308864e-05, 1.6383803085773252e-05, 1.672424332355149e-05, 3.275104063504841e-06, -0.00016042673087213188, 3.201252525286691e-07, 0.00031839412986300886),
    (0.9999983310699463, 3.3261092085012933e-06, -2.577842678874731e-06, 2.217406517956988e-06, -1.6054536899900995e-05, 4.4326782244752394e-07, 9.54303759499453e-05, 4.3456033438360464e-08, -0.00019104935927316546),
    (0.9999997615814209, 4.5014058969172766e-07, 1.2502309800765943e-06, 3.000947117470787e-07, -3.411344005144201e-05, 5.999404351086923e-08, 0.00021717471827287227, 5.875010700151506e-09, -0.0004341233288869262),
    (0.9999999403953552, 6.091991622270143e-08, 3.6516846648737555e-06, 4.061342551153757e-08, -7.417624874506146e-05, 8.119425132235847e-09, 0.0004742219462059438, 7.948761093778955e-10, -0.0009478652500547469),
    (1.0, 8.24461388049258e-09, -5.333659487405384e-07, 5.496445520947191e-09, 1.0486079190741293e-05, 1.0987164511533365e-09, -6.707604916300625e-05, 1.078763467443622e-10, 0.00013406870129983872),
    (1.0, 1.115787240379973e-09, -7.218323361257717e-08, 7.438603621956474e-10, 1.4191365380611387e-06, 1.4871655296122555e-10, -9.077756658371072e-06, 1.455025596536208e-11, 1.8144226487493142e-05),
    (1.0, 1.5100537487100496e-10, -9.768938546983463e-09, 1.0067079114772781e-10, 1.920592467286042e-07, 2.0124691843537157e-11, -1.2285407819945249e-06, 1.9735146676580495e-12, 2.455554067637422e-06),
    (1.0, 2.0436353997954626e-11, -1.3220821104553693e-09, 1.3624346442697721e-11, 2.5992394014906495e-08, 2.723290776912579e-12, -1.6626492538307502e-07, 2.677490119808862e-13, 3.323231396734627e-07),
    (1.0, 2.7657576749662294e-12, -1.7892434756028308e-10, 1.84392301774694e-12, 3.5176876966858117e-09, 3.6801318286164286e-13, -2.250150821225816e-08, 3.747631206556766e-14, 4.4975038804295764e-08),
    (1.0, 3.7430708489313846e-13, -2.4214779487108373e-11, 2.494656499603398e-13, 4.760673522063996e-10, 5.0465328530618914e-14, -3.045248719857341e-09, 3.56554114575372e-15, 6.08671157920071e-09),
)  # fmt: skip

# gelu's table: G(a) = Q(a) exp(a^2 / 2) (Q the normal distribution's upper tail), k <= 14.
GELU_TABLE_REACH = 14.0
GELU_TABLE32 = (
    (0.5, -0.3989422619342804, 0.24999909102916718, -0.13296546041965485, 0.0623764768242836, -0.026053929701447487, 0.009069505147635937, -0.0019430355168879032),
    (0.2615782916545868, -0.137364000082016, 0.0621073953807354, -0.02508539706468582, 0.009249265305697918, -0.0031663684640079737, 0.0010577728971838951, -0.0003147849056404084),
    (0.16810199618339539, -0.06273827701807022, 0.02131311222910881, -0.006704394239932299, 0.0019714818336069584, -0.0005490043549798429, 0.00016079646593425423, -4.154548514634371e-05),
    (0.12151394784450531, -0.03440043702721596, 0.009156362153589725, -0.002310452749952674, 0.0005557169206440449, -0.0001285794423893094, 3.0230892662075348e-05, -5.854121354786912e-06),
    (0.09441064298152924, -0.02129971608519554, 0.004605770111083984, -0.0009586779633536935, 0.00019402671023271978, -3.7914862332399935e-05, 3.7768506899737986e-06, -3.771411343223008e-07),
    (0.0769193023443222, -0.014345754869282246, 0.0025954528246074915, -0.0004565185518004, 7.619726238772273e-05, -1.2673702258325648e-05, 7.539470971096307e-06, -1.4052399137653993e-06),
    (0.06477931141853333, -0.010266394354403019, 0.0015906824264675379, -0.00024120783200487494, 3.361756171216257e-05, -4.934463049721671e-06, 6.684458639938384e-06, -9.230464002030203e-07),
    (0.05589348077774048, -0.007687903009355068, 0.0010391989490017295, -0.000138133778818883, 1.6795636838651262e-05, -2.1392825146904215e-06, 3.6887154237774666e-06, -5.307094852469163e-07),
    (0.04912254586815834, -0.00596191082149744, 0.0007136550266295671, -8.428836008533835e-05, 9.564980246068444e-06, -1.1274379403403145e-06, 8.32318050925096e-07, -4.4954216349424314e-08),
    (0.043798789381980896, -0.004753180779516697, 0.0005100452108308673, -5.413977851276286e-05, 6.078928436181741e-06, -6.61209924146533e-07, -9.812944199438789e-07, 1.6163042459993449e-07),
    (0.0395066924393177, -0.0038753391709178686, 0.00037676928332075477, -3.629246566561051e-05, 2.1940441001788713e-06, -1.9422746788677614e-07, 3.415367245906964e-06, -3.531105789988942e-07),
    (0.0359748899936676, -0.003218494588509202, 0.00028569798450917006, -2.517231769161299e-05, 2.486132871126756e-06, -2.1427113949812338e-07, -7.415129061882908e-07, 6.172631827894293e-08),
    (0.03301897272467613, -0.002714627655223012, 0.00022160258959047496, -1.7982220015255734e-05, 2.7093608423456317e-06, -2.2740199767667946e-07, -3.344257038406795e-06, 2.902912683566683e-07),
    (0.03050941415131092, -0.0023198919370770454, 0.00017543415015097708, -1.319141301792115e-05, 7.235639145619643e-07, -5.3413529599311005e-08, 7.057832931423036e-07, -5.359645882663244e-08),
    (0.028352661058306694, -0.0020050329621881247, 0.00014106107119005173, -9.881404366751667e-06, 1.0943218740067095e-06, -6.045272726851181e-08, -1.0774418797154794e-06, 4.419818822043453e-08),
)  # fmt: skip


# gelu's Q(a) = Phi(-a) (the normal distribution's upper tail) on quarter units: s = 4a = k + t,
# degree 7 (within 1.02 eps; k = 30 and 31 would need 1.8), k <= 29: a up to 7.25.
GELU_QUARTER_REACH = 7.25
GELU_QUARTER_TABLE32 = (
    (0.5, -0.0997355729341507, 1.0904996372573805e-07, 0.0010375117417424917, 8.281474038085435e-06, -3.4526623494457453e-05, 3.6525034374790266e-05, -2.098591903632041e-05),
    (0.40129366517066956, -0.09666702896356583, 0.003021500539034605, 0.0009439059067517519, -5.320644049788825e-05, -6.926732567080762e-06, 1.9096672986052e-05, -3.7506526950892294e-06),
    (0.3085375428199768, -0.0880163311958313, 0.005500726867467165, 0.0006876692059449852, -7.565757550764829e-05, -5.084930762677686e-06, -7.603794074384496e-06, 1.8288102410224383e-06),
    (0.22662734985351562, -0.07528435438871384, 0.007058090530335903, 0.0003429609350860119, -9.154505823971704e-05, 1.269677795789903e-06, 5.923909611738054e-06, -2.7026026145904325e-06),
    (0.15865525603294373, -0.060492683202028275, 0.007561434060335159, 8.970474851821564e-08, -7.715416722930968e-05, 3.1087595289136516e-06, -3.8090413454483496e-06, 2.0193804175505647e-06),
    (0.10564977675676346, -0.04566227272152901, 0.007134507410228252, -0.00026745564537122846, -5.104184674564749e-05, 4.82006043966976e-06, -6.1983441810298245e-06, 2.682419335542363e-06),
    (0.06680720299482346, -0.032379399985075, 0.006071012932807207, -0.00042154089896939695, -2.238666820630897e-05, 5.052453616372077e-06, -3.7066847653477453e-06, 1.7486096339780488e-06),
    (0.040059156715869904, -0.021569330245256424, 0.004718301817774773, -0.0004633937496691942, 1.4176162039802875e-06, 4.167428869550349e-06, -1.304901409149295e-09, 3.095613720915935e-08),
    (0.0227501317858696, -0.013497741892933846, 0.0033744473475962877, -0.00042180230957455933, 1.744668225001078e-05, 2.2105953121354105e-06, 1.523764225908053e-08, -7.089966658213598e-08),
    (0.012224473059177399, -0.007934913039207458, 0.0022316649556159973, -0.00033577310387045145, 2.4287495762109756e-05, 2.810932926422538e-07, -1.0823185903063859e-06, 4.899605414721009e-07),
    (0.006209665443748236, -0.004382075276225805, 0.0013693899381905794, -0.00023963699641171843, 2.3271493773791008e-05, -7.26396592654055e-07, -3.7050745049782563e-07, 2.0959824098554236e-07),
    (0.0029797633178532124, -0.002273390768095851, 0.0007814719574525952, -0.00015540093590971082, 1.8635631931829266e-05, -1.1593309636737104e-06, -2.045173488340879e-07, 1.6967152305369382e-07),
    (0.0013498980551958084, -0.001107962103560567, 0.00041548407170921564, -9.232926822733134e-05, 1.3002424566366244e-05, -1.0935495993180666e-06, -2.271952581622827e-08, 3.8141852343187566e-08),
    (0.0005770250572822988, -0.0005072620115242898, 0.0002060740953311324, -5.0527509301900864e-05, 8.128761692205444e-06, -8.52700793529948e-07, 1.483821243652983e-08, 2.2473686911439472e-08),
    (0.00023262908507604152, -0.00021817068045493215, 9.544922068016604e-05, -2.5566436306689866e-05, 4.603351953846868e-06, -5.696520020137541e-07, 3.095516021289768e-08, 1.0893606905426623e-08),
    (8.84172841324471e-05, -8.814891771180555e-05, 4.131988680455834e-05, -1.1994347914878745e-05, 2.3798588699719403e-06, -3.327693036681012e-07, 3.4689250583141984e-08, -4.766648853404831e-09),
    (3.16712430503685e-05, -3.345755612826906e-05, 1.6728687114664353e-05, -5.227690053288825e-06, 1.1336654779370292e-06, -1.782582188525339e-07, 1.7503403171303944e-08, 5.899733479530767e-10),
    (1.0688525435398333e-05, -1.1929659194720443e-05, 6.337656941468595e-06, -2.12032682611607e-06, 4.969102178620233e-07, -8.55557402701379e-08, 1.182123021692405e-08, -1.6763220811455426e-09),
    (3.3976730264839716e-06, -3.995935003331397e-06, 2.247721113235457e-06, -8.012809757929062e-07, 2.0185903792935278e-07, -3.7804682051501004e-08, 5.669043456890677e-09, -8.951897556563893e-10),
    (1.017083263832319e-06, -1.2573768799484242e-06, 7.465659450645035e-07, -2.824158684688882e-07, 7.608201713082963e-08, -1.5444415524257238e-08, 2.383287345253393e-09, -2.2904739216400571e-10),
    (2.8665158424701076e-07, -3.7167990285524866e-07, 2.3229902978982864e-07, -9.291859726090479e-08, 2.662689091437187e-08, -5.797171631627407e-09, 9.62385060532256e-10, -9.665156869287372e-11),
    (7.604960217122425e-08, -1.0321176802108312e-07, 6.773296945539187e-08, -2.8558318376781244e-08, 8.662107475743142e-09, -2.003065713296337e-09, 3.7660688456675473e-10, -6.381851297421193e-11),
    (1.8989561922921894e-08, -2.6924398710548303e-08, 1.8510572630248134e-08, -8.203604906498185e-09, 2.626516559800507e-09, -6.447763989392286e-10, 1.2852517661254836e-10, -2.205978628933014e-11),
    (4.462172409347431e-09, -6.598107837874068e-09, 4.7423935889412405e-09, -2.2036668045899432e-09, 7.424761361285448e-10, -1.9282413166177292e-10, 4.045542026376303e-11, -6.775838570782788e-12),
    (9.86587589402177e-10, -1.518970615954629e-09, 1.1392330412363094e-09, -5.537982850079004e-10, 1.9573662135563552e-10, -5.347420770074329e-11, 1.2036447359642377e-11, -2.3344371141015285e-12),
    (2.052263359253459e-10, -3.2850044906496123e-10, 2.566416801297322e-10, -1.3024599454514174e-10, 4.819226614993788e-11, -1.3833658177309083e-11, 3.263048034898852e-12, -6.411568324871109e-13),
    (4.0160003794698085e-11, -6.673891300712498e-11, 5.422558582712789e-11, -2.8677130115006833e-11, 1.1081649486932577e-11, -3.330667555992428e-12, 8.282252379580857e-13, -1.7343803259892154e-13),
    (7.392257812821601e-12, -1.2737346767599522e-11, 1.0747151432677349e-11, -5.91251483536559e-12, 2.381963766853734e-12, -7.491711786523914e-13, 1.9406094027736576e-13, -3.9478179568713107e-14),
    (1.279812518982515e-12, -2.2836806230774886e-12, 1.99822536989247e-12, -1.1418230727242018e-12, 4.786183385382947e-13, -1.5698087361265545e-13, 4.2599933048345986e-14, -9.070819927971784e-15),
    (2.0838581240353177e-13, -3.846345984770405e-13, 3.4857606709924605e-13, -2.0658694481652529e-13, 8.99544653175377e-14, -3.0710748207722974e-14, 8.702831546234836e-15, -1.9284001004653446e-15),
)  # fmt: skip


class _Ops:
    """Lane-generic float and integer arithmetic for one float dtype on one emitter."""

    def __init__(self, m: ExprEmitter, dtype: DType):
        self.m, self.b, self.dtype = m, m.b, dtype
        self.fmt, self.k = _FORMATS[dtype], _C[dtype]
        self.itype = value_type_of_width(ir.IntType(self.fmt.bits), m.width)
        # The float of each integer `unshift` made, for scalef: no conversion back
        self.float_of: dict[ir.Value, ir.Value] = {}
        # AVX-512's vscalef where a value fills one 512-bit register (ldexp)
        self.scalef = m.scalef and m.width * self.fmt.bits == 512

    # --- constants and arithmetic ------------------------------------------------------------

    def c(self, value: float) -> ir.Value:
        return self.m.const(self.dtype, value)

    def ic(self, value: int) -> ir.Value:
        t = ir.IntType(self.fmt.bits)
        value &= (1 << self.fmt.bits) - 1
        if self.m.width == 1:
            return ir.Constant(t, value)
        return ir.Constant(self.itype, [ir.Constant(t, value)] * self.m.width)

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fsub(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fdiv(a, b)

    def neg(self, a: ir.Value) -> ir.Value:
        return self.b.fneg(a)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """a * b + c with one rounding."""
        return self.m.intrinsic("llvm.fma", a, b, c)

    def abs(self, a: ir.Value) -> ir.Value:
        return self.m.intrinsic("llvm.fabs", a)

    def copysign(self, mag: ir.Value, sign: ir.Value) -> ir.Value:
        return self.m.intrinsic("llvm.copysign", mag, sign)

    def poly(self, x: ir.Value, coefs: Sequence[float]) -> ir.Value:
        """sum(coefs[i] * x**i) by Horner's rule with fma."""
        acc = self.c(coefs[-1])
        for coef in reversed(coefs[:-1]):
            acc = self.fma(acc, x, self.c(coef))
        return acc

    # --- comparisons and selection ---------------------------------------------------------

    def cmp(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """Ordered comparison: false when either side is NaN."""
        return self.b.fcmp_ordered(op, a, b)

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """x limited to [lo, hi]; NaN stays NaN (so it flows on to the result)."""
        x = self.select(self.cmp("<", x, self.c(lo)), self.c(lo), x)
        return self.select(self.cmp(">", x, self.c(hi)), self.c(hi), x)

    def is_nan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def keep_zero(self, x: ir.Value, result: ir.Value) -> ir.Value:
        """f(+-0) = +-0 for odd f whose formula loses the sign of zero."""
        return self.select(self.cmp("==", x, self.c(0.0)), x, result)

    # --- bits ---------------------------------------------------------------------------------

    def bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, self.itype)

    def from_bits(self, i: ir.Value) -> ir.Value:
        return self.b.bitcast(i, x_type(self.m, self.dtype))

    def round_to_int(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(rint(x) as a float, as an integer) for |x| < 2**(mant-1), by the shifter trick."""
        shifted = self.add(x, self.c(self.fmt.shifter))
        return self.unshift(shifted)

    def unshift(self, shifted: ir.Value) -> tuple[ir.Value, ir.Value]:
        n = self.b.sub(self.bits(shifted), self.ic(self.fmt.shifter_bits))
        nf = self.float_of[n] = self.sub(shifted, self.c(self.fmt.shifter))
        return nf, n

    def pow2(self, n: ir.Value) -> ir.Value:
        """2**n for an integer n in the normal exponent range."""
        biased = self.b.add(n, self.ic(self.fmt.bias))
        return self.from_bits(self.b.shl(biased, self.ic(self.fmt.mant)))

    def ldexp_normal(self, p: ir.Value, n: ir.Value) -> ir.Value:
        """p * 2**n by adding n to p's exponent bits: exact while the result is normal
        (callers keep it so, or send the other lanes to `ldexp` on a rare branch)."""
        return self.from_bits(self.b.add(self.bits(p), self.b.shl(n, self.ic(self.fmt.mant))))

    @property
    def exp_normal(self) -> tuple[float, float]:
        """The exp arguments whose p * 2**n (p within [sqrt(1/2), sqrt(2)]) is normal."""
        ln2 = self.k.ln2[0]
        return (2 - self.fmt.bias) * ln2, (self.fmt.bias - 1) * ln2

    def outside(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """Whether x is NaN or outside [lo, hi]."""
        inside = self.b.and_(self.cmp(">=", x, self.c(lo)), self.cmp("<=", x, self.c(hi)))
        return self.b.not_(inside)

    def unit_split(self, a: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(k = rint(a) as an integer, t = a - k) for a >= 0 below 2**22: t is exact (a and
        k are within a factor of 2 of each other, or k = 0)."""
        kf, k = self.round_to_int(a)
        return k, self.sub(a, kf)

    def table_poly(
        self, name: str, index: ir.Value, v: ir.Value, rows: Sequence[Sequence[float]]
    ) -> ir.Value:
        """Each lane's polynomial rows[k] (lowest degree first) at v, k the low 4 bits of the
        lane's `index` (5 bits past 16 rows; so never outside the table: rows past the last
        repeat it). 16 float32 lanes take a coefficient by AVX-512's vpermps (32 rows: one
        vpermi2ps over two registers); elsewhere (scalar code, PTX) each lane loads it from
        the module's constant `name`: the same values."""
        if len(rows) > 32:
            raise ValueError(f"table_poly takes at most 32 rows, got {len(rows)}")
        size = 16 if len(rows) <= 16 else 32
        padded = [*rows, *[rows[-1]] * (size - len(rows))]
        pick = self._picker(name, padded, self.b.and_(index, self.ic(size - 1)))
        acc = pick(len(rows[0]) - 1)
        for j in range(len(rows[0]) - 2, -1, -1):
            acc = self.fma(acc, v, pick(j))
        return acc

    def _picker(self, name: str, rows: Sequence[Sequence[float]], index: ir.Value) -> Callable:
        """pick(j): coefficient j of each lane's row, by AVX-512's permutes or by loads."""
        vt = x_type(self.m, self.dtype)
        if not (self.scalef and self.fmt.bits == 32):
            return self._loaded(name, rows, index)
        module = self.b.module

        def column(j: int, first: int) -> ir.Constant:
            return ir.Constant(vt, [row[j] for row in rows[first : first + 16]])

        if len(rows) == 16:
            fnty = ir.FunctionType(vt, [vt, self.itype])
            fn = declare(module, "llvm.x86.avx512.permvar.sf.512", fnty)
            return lambda j: self.b.call(fn, [column(j, 0), index])
        fnty = ir.FunctionType(vt, [vt, self.itype, vt])
        fn = declare(module, "llvm.x86.avx512.vpermi2var.ps.512", fnty)
        return lambda j: self.b.call(fn, [column(j, 0), index, column(j, 16)])

    @property
    def tables(self) -> bool:
        """Whether float32's table forms are used: on the GPU and on AVX-512 hosts (their
        vector and scalar code alike, so the bits match); an AVX2 host has no one-register
        16-entry permute and keeps the exp forms (tanh 0.50 -> 1.05 ns an element there)."""
        from kael.codegen.cpu import compiler  # it imports this module

        return self.dtype is float32 and (targets_gpu(self.b.module) or compiler.has_avx512f())

    def _loaded(self, name: str, rows: Sequence[Sequence[float]], index: ir.Value) -> Callable:
        """Coefficient j of each lane's row, loaded lane by lane from a constant global."""
        b, width = self.b, self.m.width
        element = x_type(self.m, self.dtype)
        element = element.element if width > 1 else element
        column = ir.ArrayType(element, len(rows))
        table = b.module.globals.get(name)
        if table is None:
            table = ir.GlobalVariable(b.module, ir.ArrayType(column, len(rows[0])), name)
            table.global_constant = True
            table.linkage = "internal"
            table.initializer = ir.Constant(
                table.value_type,
                [ir.Constant(column, [row[j] for row in rows]) for j in range(len(rows[0]))],
            )
        i32 = ir.IntType(32)
        zero = ir.Constant(i32, 0)

        def load(j: int, k: ir.Value) -> ir.Value:
            return b.load(b.gep(table, [zero, ir.Constant(i32, j), k], inbounds=True))

        def pick(j: int) -> ir.Value:
            if width == 1:
                return load(j, index)
            lanes = ir.Constant(x_type(self.m, self.dtype), ir.Undefined)
            for lane in range(width):
                at = ir.Constant(i32, lane)
                lanes = b.insert_element(lanes, load(j, b.extract_element(index, at)), at)
            return lanes

        return pick

    def above_or_nan(self, x: ir.Value, hi: float) -> ir.Value:
        """Whether x is NaN or above hi: one unordered compare."""
        return self.b.fcmp_unordered(">", x, self.c(hi))

    def ldexp(self, p: ir.Value, n: ir.Value, scale: ir.Value | None = None) -> ir.Value:
        """p * 2**n (times scale) in two steps, so overflow and subnormal results round once.

        `scale` joins between the steps: p * scale itself may overflow where the result
        does not. Without a scale, AVX-512's vscalef computes p * 2**n in one instruction,
        rounded once: the same bits (exp 0.73x the time, float64 0.78x).
        """
        if self.scalef and scale is None:
            nf = self.float_of.get(n)
            if nf is None:
                nf = self.b.sitofp(n, p.type)
            suffix, mask = ("ps", ir.IntType(16)) if self.fmt.bits == 32 else ("pd", ir.IntType(8))
            fnty = ir.FunctionType(p.type, [p.type, p.type, p.type, mask, ir.IntType(32)])
            fn = declare(self.b.module, f"llvm.x86.avx512.mask.scalef.{suffix}.512", fnty)
            # all lanes (mask -1), the current rounding mode (4)
            return self.b.call(
                fn, [p, nf, p, ir.Constant(mask, -1), ir.Constant(ir.IntType(32), 4)]
            )
        half = self.b.ashr(n, self.ic(1))
        rest = self.b.sub(n, half)
        p = self.mul(p, self.pow2(half))
        if scale is not None:
            p = self.mul(p, scale)
        return self.mul(p, self.pow2(rest))


def x_type(m: ExprEmitter, dtype: DType) -> ir.Type:
    """The LLVM type of one float value of `dtype` at the emitter's width."""
    t = ir.FloatType() if dtype is float32 else ir.DoubleType()
    return value_type_of_width(t, m.width)


# --- exp family -------------------------------------------------------------------------------


def _exp_reduce(o: _Ops, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = n ln2 + r with |r| <= ln2/2: (n as an integer, r). |x| must be below ~2**20."""
    shifted = o.fma(x, o.c(o.k.log2e), o.c(o.fmt.shifter))
    nf, n = o.unshift(shifted)
    hi, lo = o.k.ln2
    r = o.fma(nf, o.c(-hi), x)  # exact: x and n * hi agree in their leading bits
    return n, o.fma(nf, o.c(-lo), r)


def _expm1_poly(o: _Ops, r: ir.Value) -> ir.Value:
    """expm1(r) = r + r^2 P(r) on the reduced range."""
    return o.fma(o.mul(r, r), o.poly(r, o.k.expm1_poly), r)


def _exp_parts(o: _Ops, x: ir.Value, extra: ir.Value | None = None) -> tuple[ir.Value, ir.Value]:
    """exp(x + extra) = p * 2**n: (p, n) for x within exp's clamp (extra tiny, as pow's)."""
    n, r = _exp_reduce(o, x)
    if extra is not None:
        r = o.add(r, extra)
    return o.add(o.c(1.0), _expm1_poly(o, r)), n


def _exp_clamped(o: _Ops, x: ir.Value, extra: ir.Value | None = None) -> ir.Value:
    """exp(x + extra) for x within exp's clamp."""
    return o.ldexp(*_exp_parts(o, x, extra))


def _exp(o: _Ops, x: ir.Value) -> ir.Value:
    """exp(x): 0 below the underflow edge, inf above overflow, NaN kept.

    Lanes below the edge (softmax's -inf mask) compute exp(0) and take 0: the clamped
    edge's subnormal steps ran 3x slower than normal lanes here (0.6 vs 0.2 ms on 2M).
    Normal results scale by an exponent add; the two-step ldexp of subnormal, overflowing
    and NaN lanes runs on a rare branch (exp 0.8x the time)."""
    below = o.cmp("<", x, o.c(o.k.exp_lo))
    x = o.clamp(o.select(below, o.c(0.0), x), o.k.exp_lo, o.k.exp_hi)
    return o.select(below, o.c(0.0), _exp_scaled(o, x, *_exp_parts(o, x)))


def _exp_scaled(o: _Ops, x: ir.Value, p: ir.Value, n: ir.Value) -> ir.Value:
    """p * 2**n = exp(x): an exponent add where the result is normal, `ldexp` elsewhere."""
    if o.scalef:
        return o.ldexp(p, n)  # one instruction already
    edge = o.outside(x, *o.exp_normal)
    return o.m.rarely(edge, [o.ldexp_normal(p, n)], lambda: [o.ldexp(p, n)])[0]


def _exp2(o: _Ops, x: ir.Value) -> ir.Value:
    """2**x = 2**n * e**((x - n) ln2): the reduction is exact."""
    x = o.clamp(x, o.k.exp_lo * o.k.log2e, o.k.exp_hi * o.k.log2e)
    nf, n = o.round_to_int(x)
    r = o.mul(o.sub(x, nf), o.c(o.k.ln2[0]))
    return o.ldexp(o.add(o.c(1.0), _expm1_poly(o, r)), n)


def _expm1_bounded(o: _Ops, x: ir.Value) -> ir.Value:
    """expm1(x) for x in [expm1_lo, exp_hi] or NaN: 2 (h p + (h - 1/2)) with h = 2**(n-1)."""
    n, r = _exp_reduce(o, x)
    h = o.pow2(o.b.sub(n, o.ic(1)))
    return o.mul(o.c(2.0), o.fma(h, _expm1_poly(o, r), o.sub(h, o.c(0.5))))


def _expm1(o: _Ops, x: ir.Value) -> ir.Value:
    return o.keep_zero(x, _expm1_bounded(o, o.clamp(x, o.k.expm1_lo, o.k.exp_hi)))


# --- log family -------------------------------------------------------------------------------


def _log_reduce(o: _Ops, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = 2**k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)): (k as a float, f), x > 0 finite."""
    b, fmt = o.b, o.fmt
    subnormal = o.cmp("<", x, o.c(2.0 ** (1 - fmt.bias)))
    x = o.select(subnormal, o.mul(x, o.c(2.0 ** (fmt.mant + 1))), x)
    ix = o.bits(x)
    tmp = b.sub(ix, o.ic(o.k.sqrt_half_bits))
    k = b.ashr(tmp, o.ic(fmt.mant))
    k = b.sub(k, b.select(subnormal, o.ic(fmt.mant + 1), o.ic(0)))
    z = o.from_bits(b.sub(ix, b.and_(tmp, o.ic(-1 << fmt.mant))))
    return b.sitofp(k, x.type), o.sub(z, o.c(1.0))


def _log1p_reduced(o: _Ops, f: ir.Value, tail: ir.Value) -> ir.Value:
    """log(1 + f) + tail as f - (f^2/2 - (s (f^2/2 + z R(z)) + tail)), fdlibm's order."""
    s = o.div(f, o.add(o.c(2.0), f))
    z = o.mul(s, s)
    hfsq = o.mul(o.mul(o.c(0.5), f), f)
    r = o.mul(z, o.poly(z, o.k.log_poly))
    return o.sub(f, o.sub(hfsq, o.fma(s, o.add(hfsq, r), tail)))


def _log_specials(o: _Ops, x: ir.Value, result: ir.Value) -> ir.Value:
    """log(inf) = inf, log(+-0) = -inf, log(negative or NaN) = NaN."""
    result = o.select(o.cmp("==", x, o.c(INF)), x, result)
    result = o.select(o.cmp("==", x, o.c(0.0)), o.c(-INF), result)
    return o.select(o.b.fcmp_unordered("<", x, o.c(0.0)), o.c(NAN), result)


def _log_with(o: _Ops, x: ir.Value, extra: ir.Value | None = None) -> ir.Value:
    """log(x) + extra (a correction well below log's ulp), before special values."""
    k, f = _log_reduce(o, x)
    hi, lo = o.k.ln2
    tail = o.mul(k, o.c(lo))
    if extra is not None:
        tail = o.add(tail, extra)
    return o.fma(k, o.c(hi), _log1p_reduced(o, f, tail))


def _log(o: _Ops, x: ir.Value) -> ir.Value:
    return _log_specials(o, x, _log_with(o, x))


def _log2(o: _Ops, x: ir.Value) -> ir.Value:
    """log2(x) = k + log(1 + f) log2(e)."""
    k, f = _log_reduce(o, x)
    return _log_specials(o, x, o.fma(_log1p_reduced(o, f, o.c(0.0)), o.c(o.k.log2e), k))


def _log1p(o: _Ops, x: ir.Value) -> ir.Value:
    """log(u) + c/u with u = 1 + x rounded and c its exact rounding error (Fast2Sum)."""
    u = o.add(o.c(1.0), x)
    big = o.cmp(">", o.abs(x), o.c(1.0))
    c = o.select(big, o.sub(o.c(1.0), o.sub(u, x)), o.sub(x, o.sub(u, o.c(1.0))))
    return o.keep_zero(x, _log_specials(o, u, _log_with(o, u, o.div(c, u))))


# --- trigonometry (float64 inside) ------------------------------------------------------------


def _in_float64(fn: Callable[[_Ops, ir.Value, _Consts], ir.Value]) -> Callable:
    """An emitter computing in float64 with `dtype`'s polynomials, rounding once at the end."""

    def emit(m: ExprEmitter, v: ir.Value, dtype: DType) -> ir.Value:
        o = _Ops(m, float64)
        return m.convert(fn(o, m.convert(v, dtype, float64), _C[dtype]), float64, dtype)

    return emit


def _reduce_pio2(o: _Ops, x: ir.Value, bounded: bool = False) -> tuple[ir.Value, ir.Value]:
    """x = q pi/2 + r, |r| <= pi/4 (float64): (q as an integer, r), for every finite x.

    Cody-Waite with three parts of pi/2 below trig_reduce.HUGE; Payne-Hanek from there,
    unless `bounded` (the caller's |x| is below HUGE: half the code, a third of the
    compile time).
    """
    shifted = o.fma(x, o.c(TWO_OVER_PI), o.c(o.fmt.shifter))
    qf, q = o.unshift(shifted)
    r = x
    for part in trig_reduce.PIO2:
        r = o.fma(qf, o.c(-part), r)
    return (q, r) if bounded else trig_reduce.exact_for_huge(o.m, x, q, r)


def _sin_cos_reduced(o: _Ops, r: ir.Value, k: _Consts) -> tuple[ir.Value, ir.Value]:
    """(sin r, cos r) for |r| <= pi/4."""
    z = o.mul(r, r)
    sin = o.fma(o.mul(r, z), o.poly(z, k.sin_poly), r)
    half = o.mul(o.c(0.5), z)
    w = o.sub(o.c(1.0), half)
    # cos r = w + ((1 - w) - z/2) + z^2 C(z): the bracket recovers w's rounding error.
    cos = o.add(w, o.fma(o.mul(z, z), o.poly(z, k.cos_poly), o.sub(o.sub(o.c(1.0), w), half)))
    return sin, cos


def _bit(o: _Ops, q: ir.Value, bit: int) -> ir.Value:
    return o.b.icmp_unsigned("!=", o.b.and_(q, o.ic(bit)), o.ic(0))


def _sin_or_cos(shift: int, bounded: bool = False) -> Callable:
    """sin (shift 0) or cos (shift 1): the quadrant q + shift picks +-sin r or +-cos r;
    `bounded` for arguments below trig_reduce.HUGE only (see _reduce_pio2)."""

    def fn(o: _Ops, x: ir.Value, k: _Consts) -> ir.Value:
        q, r = _reduce_pio2(o, x, bounded)
        q = o.b.add(q, o.ic(shift))
        sin, cos = _sin_cos_reduced(o, r, k)
        v = o.select(_bit(o, q, 1), cos, sin)
        v = o.select(_bit(o, q, 2), o.neg(v), v)
        return o.keep_zero(x, v) if shift == 0 else v

    return fn


def _tan(o: _Ops, x: ir.Value, k: _Consts) -> ir.Value:
    """tan r in even quadrants, -1/tan r = -cos r / sin r in odd ones."""
    q, r = _reduce_pio2(o, x)
    sin, cos = _sin_cos_reduced(o, r, k)
    odd = _bit(o, q, 1)
    return o.keep_zero(x, o.div(o.select(odd, o.neg(cos), sin), o.select(odd, sin, cos)))


# --- hyperbolic, logistic, error function -----------------------------------------------------


def _from_table(
    o: _Ops,
    x: ir.Value,
    name: str,
    rows: Sequence[Sequence[float]],
    reach: float,
    finish: Callable[[ir.Value, ir.Value], ir.Value],
    fallback: Callable[[_Ops, ir.Value], ir.Value],
) -> ir.Value:
    """finish(|x|, f(|x|)), f from its table `rows` (one polynomial per unit of |x|); |x|
    past `reach` and NaN take `fallback` (the exp form) on a rare branch."""
    a = o.abs(x)
    k, t = o.unit_split(a)
    fast = finish(a, o.table_poly(name, k, t, rows))
    return o.m.rarely(o.above_or_nan(a, reach), [fast], lambda: [fallback(o, x)])[0]


def _tanh(o: _Ops, x: ir.Value) -> ir.Value:
    """The table form where `o.tables` (float32 on the GPU and AVX-512 hosts), else expm1's."""
    return _tanh_table(o, x) if o.tables else _tanh_expm1(o, x)


def _tanh_table(o: _Ops, x: ir.Value) -> ir.Value:
    """tanh(|x|) from its table polynomial, x's sign copied on (no exp, no division); below
    tanh_small the odd polynomial x + x^3 T(x^2) (the table's row 0 ends its Horner steps
    near 1: an ulp off, which tanhshrink's x - tanh(x) magnifies). In cache, 1 thread:
    0.45 -> 0.3 ns an element."""

    def finish(a: ir.Value, y: ir.Value) -> ir.Value:
        z = o.mul(x, x)
        small = o.fma(o.mul(x, z), o.poly(z, o.k.tanh_poly), x)
        return o.copysign(o.select(o.cmp("<", a, o.c(o.k.tanh_small)), small, y), x)  # +-0

    return _from_table(o, x, "kael_tanh", TANH_TABLE32, TANH_TABLE_REACH, finish, _tanh_expm1)


def _tanh_expm1(o: _Ops, x: ir.Value) -> ir.Value:
    """Odd polynomial near 0, else e / (e + 2) with e = expm1(2|x|), saturating to +-1."""
    a = o.abs(x)
    z = o.mul(x, x)
    small = o.fma(o.mul(x, z), o.poly(z, o.k.tanh_poly), x)
    e = _expm1_bounded(o, o.clamp(o.add(a, a), 0.0, o.k.tanh_big))
    big = o.copysign(o.div(e, o.add(e, o.c(2.0))), x)
    return o.keep_zero(x, o.select(o.cmp("<", a, o.c(o.k.tanh_small)), small, big))


def _logistic(o: _Ops, x: ir.Value, scale: ir.Value | None = None) -> ir.Value:
    """scale * sigmoid(x) (sigmoid itself without a scale): the table form where `o.tables`
    (float32 on the GPU and AVX-512 hosts), else the exp form."""
    return _logistic_table(o, x, scale) if o.tables else _logistic_exp(o, x, scale)


def _logistic_table(o: _Ops, x: ir.Value, scale: ir.Value | None) -> ir.Value:
    """s = sigmoid(-|x|) from |x|'s table polynomial (no exp, no division): scale * s for
    x <= 0, scale - scale * s above (s <= 1/2: no cancellation); zeros keep their sign. In
    cache, 1 thread: silu 0.47 -> 0.32 ns an element, sigmoid 0.40 -> 0.29."""

    def finish(a: ir.Value, s: ir.Value) -> ir.Value:
        below = o.cmp("<=", x, o.c(0.0))
        if scale is None:
            return o.select(below, s, o.sub(o.c(1.0), s))
        part = o.mul(scale, s)
        return o.select(below, part, o.sub(scale, part))

    rows, reach = LOGISTIC_TABLE32, LOGISTIC_TABLE_REACH
    return _from_table(
        o, x, "kael_logistic", rows, reach, finish, lambda o, x: _logistic_exp(o, x, scale)
    )


def _logistic_exp(o: _Ops, x: ir.Value, scale: ir.Value | None = None) -> ir.Value:
    """scale * sigmoid(x) as scale / (1 + e) or scale e / (1 + e), e = exp(-|x|) <= 1.

    Where e is normal (|x| below ~87 in float32) it is scaled by an exponent add (one
    vscalef with AVX-512) and scale * e rounds once; the other lanes (and NaN) take
    `_logistic_edge` on a rare branch, AVX-512 or not (silu 0.61 -> 0.50 ns an element).
    """
    a = o.abs(x)
    lo = o.k.exp_lo - LOGISTIC_REACH
    p, n = _exp_parts(o, o.clamp(o.neg(a), lo, 0.0))
    positive = o.cmp(">=", x, o.c(0.0))
    e = o.ldexp(p, n) if o.scalef else o.ldexp_normal(p, n)
    if scale is None:  # q is finite and above 0
        fast = _over_one_plus_parts(o, o.select(positive, o.c(1.0), e), e)[1]
    else:  # q is finite; where it is zero (scale +-0 or tiny) it keeps its sign: silu(-0) = -0
        q, corrected = _over_one_plus_parts(o, o.select(positive, scale, o.mul(scale, e)), e)
        fast = o.select(o.cmp("==", q, o.c(0.0)), q, corrected)
    edge = o.above_or_nan(a, -o.exp_normal[0])
    return o.m.rarely(edge, [fast], lambda: [_logistic_edge(o, x, a, p, n, positive, scale)])[0]


def _logistic_edge(
    o: _Ops,
    x: ir.Value,
    a: ir.Value,
    p: ir.Value,
    n: ir.Value,
    positive: ir.Value,
    scale: ir.Value | None,
) -> ir.Value:
    """_logistic for every lane, e = p * 2**n subnormal or zero included: scale * e is
    scaled by 2**n last, so it keeps full precision where e is subnormal or underflows
    but scale * e does not (|x| up to LOGISTIC_REACH past exp's edge); it is scale * 0
    beyond, NaN for an infinite scale as in PyTorch."""
    e = o.ldexp(p, n)
    if scale is None:
        return _over_one_plus(o, o.select(positive, o.c(1.0), e), e)
    in_range = o.cmp("<", a, o.c(LOGISTIC_REACH - o.k.exp_lo))
    scaled = o.select(in_range, o.ldexp(p, n, scale), o.mul(scale, e))
    return _over_one_plus(o, o.select(positive, scale, scaled), e)


# 1/d ~ RECIPROCAL_LINE - RECIPROCAL_SLOPE d on [1, 2], within 1/17 (the minimax line):
# enough for a correction below an ulp.
RECIPROCAL_LINE, RECIPROCAL_SLOPE = 24 / 17, 8 / 17


def _over_one_plus_parts(o: _Ops, num: ir.Value, e: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(num / (1 + e) rounded, corrected for the rounding of 1 + e), 0 <= e <= 1: 1 + e =
    d + d_err exactly (Fast2Sum), and num / (d + d_err) = q (1 - d_err / d) to far below
    an ulp. The correction is not meant for an infinite or zero q."""
    d = o.add(o.c(1.0), e)
    d_err = o.add(o.sub(o.c(1.0), d), e)
    q = o.div(num, d)
    inverse = o.fma(d, o.c(-RECIPROCAL_SLOPE), o.c(RECIPROCAL_LINE))
    return q, o.fma(o.neg(q), o.mul(d_err, inverse), q)


def _over_one_plus(o: _Ops, num: ir.Value, e: ir.Value) -> ir.Value:
    """num / (1 + e) for 0 <= e <= 1, corrected for the rounding of 1 + e."""
    q, corrected = _over_one_plus_parts(o, num, e)
    finite_nonzero = o.b.and_(o.cmp("<", o.abs(q), o.c(INF)), o.cmp("!=", q, o.c(0.0)))
    return o.select(finite_nonzero, corrected, q)


def _sigmoid(o: _Ops, x: ir.Value) -> ir.Value:
    return _logistic(o, x)


def _silu(o: _Ops, x: ir.Value) -> ir.Value:
    return _logistic(o, x, x)


def _gelu_tanh(o: _Ops, x: ir.Value) -> ir.Value:
    """0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation for negative x."""
    z = o.mul(x, x)
    two_u = o.mul(x, o.fma(z, o.c(2 * GELU_TANH_CUBIC), o.c(2 * SQRT_2_OVER_PI)))
    return _logistic(o, two_u, x)


def _erf_parts(
    o: _Ops, x: ir.Value, square: tuple[ir.Value, ir.Value]
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(erf x for |x| < erf_small, erfc |x| for |x| >= erf_small, whether |x| is small).

    `square` is x^2 as hi + lo: exp(-x^2) is only as accurate as its argument.
    """
    k = o.k
    a = o.abs(x)
    small = o.fma(x, o.poly(square[0], k.erf_poly), x)
    ac = o.clamp(a, k.erf_small, k.erf_big)
    g = o.poly(o.sub(ac, o.c(k.erf_center)), k.erfc_poly)
    sq = o.clamp(o.neg(square[0]), -(k.erf_big**2), -(k.erf_small**2))
    # exp(-x^2) is normal on the clamp (down to exp(-erf_big^2)): an exponent add scales it
    tail = o.mul(o.ldexp_normal(*_exp_parts(o, sq, o.neg(square[1]))), g)
    tail = o.select(o.cmp(">", a, o.c(k.erf_big)), o.c(0.0), tail)
    return small, tail, o.cmp("<", a, o.c(k.erf_small))


def _erf(o: _Ops, x: ir.Value) -> ir.Value:
    small, tail, is_small = _erf_parts(o, x, _two_product(o, x, x))
    return o.select(is_small, small, o.copysign(o.sub(o.c(1.0), tail), x))


def _erfc(o: _Ops, x: ir.Value, _: _Consts) -> ir.Value:
    """erfc in float64, relative error: (1 - x) - x E(x^2) below erf_small, else exp(-x^2)
    times M(|x|) up to ERFC_SPLIT, (1 + v K(v)) / (|x| sqrt pi) (v = 1/x^2) beyond, exp's
    scaling last (subnormal results round once); 2 minus that for negative x."""
    k = o.k
    a = o.abs(x)
    hi, lo = _two_product(o, a, a)
    near = o.fma(o.neg(x), o.poly(hi, k.erf_poly), o.sub(o.c(1.0), x))
    mid = o.poly(o.sub(a, o.c(ERFC_CENTER)), ERFC_MID_POLY)
    v = o.div(o.c(1.0), hi)
    far = o.div(o.fma(v, o.poly(v, ERFC_TAIL_POLY), o.c(1.0)), o.mul(a, o.c(SQRT_PI)))
    scale = o.select(o.cmp("<", a, o.c(ERFC_SPLIT)), mid, far)
    arg = o.neg(hi)
    extra = o.select(o.cmp(">", arg, o.c(k.exp_lo)), o.neg(lo), o.c(0.0))
    tail = o.ldexp(*_exp_parts(o, o.clamp(arg, k.exp_lo, 0.0), extra), scale)
    big = o.select(o.cmp("<", x, o.c(0.0)), o.sub(o.c(2.0), tail), tail)
    result = o.select(o.cmp("<", a, o.c(k.erf_small)), near, big)
    return o.select(o.is_nan(x), x, result)


def _gelu(o: _Ops, x: ir.Value) -> ir.Value:
    """The table form where `o.tables` (float32 on the GPU and AVX-512 hosts), else erf's."""
    return _gelu_table(o, x) if o.tables else _gelu_erf(o, x)


def _gelu_table(o: _Ops, x: ir.Value) -> ir.Value:
    """x Phi(x) with Q(a) = Phi(-a) from its quarter-unit table (a = |x|: no exp, no
    division), x - x Q(x) for x > 0 (no cancellation: Q < 1/2). Past the table's reach Q
    takes its last row: below 2**-46, x - x Q rounds to x; x below -reach (gelu's tail),
    +inf and NaN take the exp form on a rare branch (one lane in 200 of N(0, 9)). In cache,
    1 thread: 1.06 -> 0.56 (exp form) -> 0.3 ns an element."""
    a = o.abs(x)
    last = float(len(GELU_QUARTER_TABLE32) - 1)
    s = o.mul(a, o.c(4.0))
    k, t = o.unit_split(o.select(o.cmp(">", s, o.c(last)), o.c(last), s))
    tail = o.mul(x, o.table_poly("kael_gelu_quarter", k, t, GELU_QUARTER_TABLE32))
    near = o.select(o.cmp("<=", x, o.c(0.0)), tail, o.sub(x, tail))  # tail: x Phi(-|x|)
    reach = o.c(GELU_QUARTER_REACH)
    far = o.b.not_(o.b.and_(o.cmp(">=", x, o.neg(reach)), o.cmp("<", x, o.c(INF))))
    return o.m.rarely(far, [near], lambda: [_gelu_exp_table(o, x)])[0]


def _gelu_exp_table(o: _Ops, x: ir.Value) -> ir.Value:
    """x Phi(x), Phi(-a) = exp(-a^2 / 2) G(a) with a = |x| = k + t: G from k's polynomial,
    exp of the exactly squared a, scaled last so a subnormal result rounds once; x - x
    Phi(-x) for x > 0. gelu's tail past the quarter table."""

    def finish(a: ir.Value, g: ir.Value) -> ir.Value:
        hi, lo = _two_product(o, a, a)
        p, n = _exp_parts(o, o.mul(hi, o.c(-0.5)), o.mul(lo, o.c(-0.5)))
        tail = o.ldexp(o.mul(x, o.mul(g, p)), n)  # x Phi(-a)
        return o.select(o.cmp("<=", x, o.c(0.0)), tail, o.sub(x, tail))

    return _from_table(o, x, "kael_gelu", GELU_TABLE32, GELU_TABLE_REACH, finish, _gelu_erf)


def _gelu_erf(o: _Ops, x: ir.Value) -> ir.Value:
    """0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(t) = erfc(|t|) for t < 0 (no cancellation).

    t^2 = x^2 / 2 comes from x exactly, not from the rounded t.
    """
    t = o.mul(x, o.c(SQRT_HALF))
    hi, lo = _two_product(o, x, x)
    half = o.c(0.5)
    small, tail, is_small = _erf_parts(o, t, (o.mul(hi, half), o.mul(lo, half)))
    big = o.select(o.cmp("<", t, o.c(0.0)), tail, o.sub(o.c(2.0), tail))
    one_plus = o.select(is_small, o.add(o.c(1.0), small), big)
    # Past erf_big the polynomial's tail is 0; decided on x^2 / 2, which its clamp uses
    # (-inf keeps inf * 0 = NaN, as in PyTorch).
    far = o.cmp(">", o.mul(hi, half), o.c(o.k.erf_big**2))
    far = o.b.and_(far, o.b.and_(o.cmp("<", x, o.c(0.0)), o.cmp(">", x, o.c(-INF))))
    near = o.mul(o.mul(half, x), one_plus)
    return o.m.rarely(far, [near], lambda: [_gelu_far(o, x, hi, lo)])[0]


def _gelu_far(o: _Ops, x: ir.Value, hi: ir.Value, lo: ir.Value) -> ir.Value:
    """gelu(x) for x < 0 with x^2 / 2 = hi / 2 + lo / 2 > erf_big^2, past erfc's polynomial.

    0.5 x erfc(a) at a = -x / sqrt 2 is -(1 + v K(v)) exp(-x^2 / 2) / sqrt(2 pi) with
    v = 1/a^2 = 2/x^2; exp is scaled last, so subnormal results round once.
    """
    v = o.div(o.c(2.0), hi)
    scale = o.mul(o.fma(v, o.poly(v, o.k.erfc_far_poly), o.c(1.0)), o.c(-INV_SQRT_2PI))
    arg = o.mul(hi, o.c(-0.5))
    extra = o.select(o.cmp(">", arg, o.c(o.k.exp_lo)), o.mul(lo, o.c(-0.5)), o.c(0.0))
    p, n = _exp_parts(o, o.clamp(arg, o.k.exp_lo, 0.0), extra)
    return o.ldexp(p, n, scale)


def _two_product(o: _Ops, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a * b = p + e exactly (with fma)."""
    p = o.mul(a, b)
    return p, o.fma(a, b, o.neg(p))


# --- softplus ------------------------------------------------------------------------------

# log1p(t) = t + t^2 H(t) on [0, 1], relative error 0.66 * 2**-24 (fit_vmath.py "log1p_unit")
LOG1P_UNIT_POLY32 = (
    -0.4999993145465851, 0.33330512046813965, -0.24958586692810059, 0.19695399701595306,
    -0.15355393290519714, 0.10680549591779709, -0.05766438692808151, 0.020204555243253708,
    -0.003318465780466795,
)  # fmt: skip


# softplus's table: log1p(exp(-a)), k <= 15.
SOFTPLUS_TABLE_REACH = 15.0
SOFTPLUS_TABLE32 = (
    (0.6931471824645996, -0.5000003576278687, 0.12501104176044464, -0.0001288669736823067, -0.00448776176199317, -0.0020789699628949165, 0.0033386736176908016, -0.0017134947702288628),
    (0.3132616877555847, -0.2689414322376251, 0.09830596297979355, -0.015142667107284069, -0.0014723526546731591, 0.0010270200436934829, -6.569142715306953e-05, -5.088556281407364e-05),
    (0.12692801654338837, -0.11920292675495148, 0.05249639227986336, -0.013326726853847504, 0.0016230863984674215, 0.0001694088859949261, -0.00013166991993784904, 3.084405034314841e-05),
    (0.04858735203742981, -0.04742587357759476, 0.02258829027414322, -0.006815230008214712, 0.0013726380420848727, -0.00015639231423847377, -8.87810529093258e-06, 8.963097570813261e-06),
    (0.018149927258491516, -0.01798621006309986, 0.008831401355564594, -0.002837917534634471, 0.000657443655654788, -0.00011144446762045845, 1.3726439647143707e-05, -1.2401632147884811e-06),
    (0.006715348456054926, -0.006692850962281227, 0.0033240308985114098, -0.0010931785218417645, 0.0002659237652551383, -5.0285558245377615e-05, 7.531583378295181e-06, -8.430332627540338e-07),
    (0.0024756852071732283, -0.0024726232513785362, 0.001233249669894576, -0.0004090463335160166, 0.00010130229202331975, -1.9904799046344124e-05, 3.0477556265395833e-06, -2.659755864442559e-07),
    (0.000911466428078711, -0.0009110511746257544, 0.0004551125457510352, -0.00015142881602514535, 3.7696729123126715e-05, -7.469704087270657e-06, 1.2951013559359126e-06, -2.2243575870106724e-07),
    (0.00033540636650286615, -0.00033535013790242374, 0.00016761933511588722, -5.5835578677942976e-05, 1.3934373782831244e-05, -2.7779442461906e-06, 4.788706178260327e-07, -7.397428447575294e-08),
    (0.0001234021910931915, -0.00012339458044152707, 6.16895777056925e-05, -2.0557969037326984e-05, 5.137935659149662e-06, -1.0280110700477962e-06, 1.6910374256440264e-07, -2.0390169552797488e-08),
    (4.539889778243378e-05, -4.539786823443137e-05, 2.269801370857749e-05, -7.565360647276975e-06, 1.8897382005889085e-06, -3.771006618080719e-07, 6.663601936907071e-08, -1.169262908717883e-08),
    (1.6701560525689274e-05, -1.67014204635052e-05, 8.350631105713546e-06, -2.7835037599288626e-06, 6.951478326300276e-07, -1.384202477083818e-07, 2.5094097466649146e-08, -5.189170426689316e-09),
    (6.144193321233615e-06, -6.144174221844878e-06, 3.072080517085851e-06, -1.0240277106277063e-06, 2.558585947554093e-07, -5.1030941250473916e-08, 8.94867024925361e-09, -1.641045632716498e-09),
    (2.260326937175705e-06, -2.2603244360652752e-06, 1.130153464146133e-06, -3.767106591112679e-07, 9.42427504924126e-08, -1.891016232491438e-08, 2.9835316439630333e-09, -2.5652066582004807e-10),
    (8.315283821502817e-07, -8.315280410897685e-07, 4.1576308262847306e-07, -1.3858691261248168e-07, 3.4652256175604634e-08, -6.9367342980797275e-09, 1.146400308016382e-09, -1.4637703549258418e-10),
    (3.059022617435403e-07, -3.0590220490012143e-07, 1.5295198352305306e-07, -5.0984802157927334e-08, 1.2735622334503205e-08, -2.5378645851503734e-09, 4.548318388586381e-10, -9.00398089420662e-11),
)  # fmt: skip


def _softplus(o: _Ops, x: ir.Value) -> ir.Value:
    """The table form where `o.tables` (float32 on the GPU and AVX-512 hosts), else exp's."""
    return _softplus_table(o, x) if o.tables else _softplus_exp(o, x)


def _softplus_table(o: _Ops, x: ir.Value) -> ir.Value:
    """max(x, 0) + log1p(exp(-|x|)), the second term |x|'s table polynomial (no exp, no
    log): two terms of one sign. In cache, 1 thread: 0.59 -> 0.39 ns an element."""

    def finish(a: ir.Value, tail: ir.Value) -> ir.Value:
        return o.add(o.select(o.cmp(">", x, o.c(0.0)), x, o.c(0.0)), tail)

    rows, reach = SOFTPLUS_TABLE32, SOFTPLUS_TABLE_REACH
    return _from_table(o, x, "kael_softplus", rows, reach, finish, _softplus_exp)


def _softplus_exp(o: _Ops, x: ir.Value) -> ir.Value:
    """log(1 + e^x) = max(x, 0) + log1p(t), t = exp(-|x|) in [0, 1]: two terms of one sign,
    so no cancellation, and one exp; float32's log1p(t) is one polynomial on [0, 1] (no
    reduction, no division), float64's the general log1p."""
    t = _exp(o, o.neg(o.abs(x)))
    if o.dtype is float32:
        log1p_t = o.fma(o.mul(t, t), o.poly(t, LOG1P_UNIT_POLY32), t)
    else:
        log1p_t = _log1p(o, t)
    return o.add(o.select(o.cmp(">", x, o.c(0.0)), x, o.c(0.0)), log1p_t)


# --- pow ----------------------------------------------------------------------------------------


def _two_sum(o: _Ops, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a + b = s + e exactly (Knuth)."""
    s = o.add(a, b)
    bb = o.sub(s, a)
    return s, o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb))


def _log_double(o: _Ops, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """ln x as hi + lo to ~2**-62 relative (float64, x > 0 finite).

    ln(1 + f) = 2 atanh(s) = 2s + (2/3) s^3 + s^5 Q(s^2), s = f / (2 + f): s, s^3 and
    the two large sums are carried in two parts; the rest is below 2**-60 of the total.
    """
    k, f = _log_reduce(o, x)
    z = o.add(f, o.c(1.0))
    d = o.add(z, o.c(1.0))
    d_lo = o.sub(z, o.sub(d, o.c(1.0)))  # 1 + z = d + d_lo exactly
    s = o.div(f, d)
    rem = o.sub(o.fma(o.neg(s), d, f), o.mul(s, d_lo))  # f - s (d + d_lo), the first exactly
    s_lo = o.div(rem, d)
    w, w_lo = _two_product(o, s, s)
    s3, s3_lo = _two_product(o, s, w)
    s3_lo = o.fma(s, w_lo, s3_lo)
    c3, c3_lo = _two_product(o, s3, o.c(TWO_THIRDS[0]))
    c3_lo = o.add(c3_lo, o.fma(s3, o.c(TWO_THIRDS[1]), o.mul(s3_lo, o.c(TWO_THIRDS[0]))))
    tail = o.mul(o.mul(s3, w), o.poly(w, POW_LOG_POLY))
    h1, e1 = _two_sum(o, o.mul(k, o.c(LN2_HEAD)), o.add(s, s))
    hi, e2 = _two_sum(o, h1, c3)
    small = o.fma(o.mul(o.c(2.0), w), s_lo, o.fma(o.c(2.0), s_lo, o.add(c3_lo, tail)))
    lo = o.add(o.add(e1, e2), o.fma(k, o.c(LN2_TAIL), small))
    total = o.add(hi, lo)
    return total, o.sub(lo, o.sub(total, hi))


def _pow_magnitude(o: _Ops, ax: ir.Value, y: ir.Value) -> ir.Value:
    """|x|**y = exp(y ln|x|) with y ln|x| in two parts; 0, inf and NaN flow through.

    The tail (about |t| 2**-53) joins only where t is inside exp's clamp: past it, it
    grows with t (to order 1 at |t| ~ 2**53) and would carry a clamped t back in range.
    """
    hi, lo = _log_double(o, ax)
    hi = _log_specials(o, ax, hi)
    t = o.mul(y, hi)
    t_lo = o.fma(y, lo, o.fma(y, hi, o.neg(t)))
    t_lo = o.select(o.cmp("<", o.abs(t), o.c(-o.k.exp_lo)), t_lo, o.c(0.0))
    return _exp_clamped(o, o.clamp(t, o.k.exp_lo, o.k.exp_hi), t_lo)


def _pow64(o: _Ops, x: ir.Value, y: ir.Value) -> ir.Value:
    """C99 pow in float64: signs for odd integer y, NaN for negative x and non-integer y."""
    b = o.b
    r = _pow_magnitude(o, o.abs(x), y)
    floor = o.m.intrinsic("llvm.floor", y)
    integer = o.cmp("==", floor, y)
    half = o.mul(y, o.c(0.5))
    odd = b.and_(integer, o.cmp("!=", o.mul(o.m.intrinsic("llvm.floor", half), o.c(2.0)), y))
    negative_sign = b.icmp_signed("<", o.bits(x), o.ic(0))
    r = o.select(b.and_(negative_sign, odd), o.neg(r), r)
    finite_negative = b.and_(o.cmp("<", x, o.c(0.0)), o.cmp(">", x, o.c(-INF)))
    r = o.select(b.and_(finite_negative, b.not_(integer)), o.c(NAN), r)
    minus_one_inf = b.and_(o.cmp("==", x, o.c(-1.0)), o.cmp("==", o.abs(y), o.c(INF)))
    one = b.or_(b.or_(o.cmp("==", y, o.c(0.0)), o.cmp("==", x, o.c(1.0))), minus_one_inf)
    return o.select(one, o.c(1.0), r)


def _pow(m: ExprEmitter, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
    """Float pow (float32 through float64, rounded once); integers use arith.INT_POW."""
    if not dtype.is_floating_point:
        return arith.INT_POW(m, a, c, dtype)
    o = _Ops(m, float64)
    r = _pow64(o, m.convert(a, dtype, float64), m.convert(c, dtype, float64))
    return m.convert(r, float64, dtype)


# --- tables -----------------------------------------------------------------------------------


def _native(fn: Callable[[_Ops, ir.Value], ir.Value]) -> Callable:
    """An emitter computing in the operand's own precision."""

    def emit(m: ExprEmitter, v: ir.Value, dtype: DType) -> ir.Value:
        return fn(_Ops(m, dtype), v)

    return emit


UNARY: dict[str, Callable] = {
    "exp": _native(_exp),
    "exp2": _native(_exp2),
    "expm1": _native(_expm1),
    "log": _native(_log),
    "log2": _native(_log2),
    "log1p": _native(_log1p),
    "sin": _in_float64(_sin_or_cos(0)),
    "cos": _in_float64(_sin_or_cos(1)),
    "cos_bounded": _in_float64(_sin_or_cos(1, bounded=True)),
    "tan": _in_float64(_tan),
    "tanh": _native(_tanh),
    "sigmoid": _native(_sigmoid),
    "silu": _native(_silu),
    "erf": _native(_erf),
    "erfc": _in_float64(_erfc),
    "gelu": _native(_gelu),
    "gelu_tanh": _native(_gelu_tanh),
    "softplus": _native(_softplus),
}
BINARY: dict[str, Callable] = {"pow": _pow}
