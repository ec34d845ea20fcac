! oocsolve.f90: the Fortran module `oocsolve` (use oocsolve), iso_c_binding over liboocsolve's
! stable ABI (include/oocsolve.h: opaque options, matrix handles, the _m calls). No C struct is
! mirrored: options are set by name through the library (which checks them), so a library with
! more options or report fields needs no change here; ooc_abi_ok() compares the library's
! ooc_abi_version() with the one this module was written for, and every call refuses a
! mismatch (OOC_ERR_ARG, errmsg naming both versions).
!
! Every call is a function returning the library's status (OOC_OK = 0; the OOC_ERR_* values
! below, the same numbers as the C enum), with optional arguments:
!   opts    type(ooc_options): options set with ooc_set (CLI names: "tile", "host_mem", ...)
!   errmsg  character(*): the library's message on failure ("" on success)
!   residual real(c_double): the residual ratio the check measured
! Matrices are Fortran arrays (column-major, read in place; outputs written in place), file
! specs "file.h5:/dset", or type(ooc_matrix) handles (arrays, files, fill/take callbacks).
! Indices passed to callbacks are 0-based: element (r0+i, c0+j) of the matrix is dst(i+1, j+1).
module oocsolve
  use iso_c_binding
  implicit none
  private

  integer, parameter, public :: OOC_FORTRAN_ABI = 1
  integer, parameter, public :: OOC_OK = 0, OOC_ERR_ARG = 1, OOC_ERR_NOMEM = 2, &
    OOC_ERR_BUDGET = 3, OOC_ERR_IO = 4, OOC_ERR_FORMAT = 5, OOC_ERR_NONFINITE = 6, &
    OOC_ERR_SINGULAR = 7, OOC_ERR_NOT_SPD = 8, OOC_ERR_ACCURACY = 9, OOC_ERR_EXISTS = 10, &
    OOC_ERR_NOSPACE = 11, OOC_ERR_CORRUPT = 12, OOC_ERR_DEVICE = 13, OOC_ERR_NODEVICE = 14, &
    OOC_ERR_INTERRUPTED = 15, OOC_ERR_INTERNAL = 16

  type, public :: ooc_options
    type(c_ptr) :: p = c_null_ptr
  end type
  type, public :: ooc_matrix
    type(c_ptr) :: p = c_null_ptr
  end type

  ! The callbacks' interfaces: write your fill/take functions with these signatures, bind(C).
  abstract interface
    integer(c_int) function ooc_fill_fn(user, r0, c0, nr, nc, dst, ld) bind(C)
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: user
      integer(c_int64_t), value :: r0, c0, nr, nc, ld
      real(c_double) :: dst(ld, *)
    end function
    integer(c_int) function ooc_take_fn(user, r0, c0, nr, nc, src, ld) bind(C)
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: user
      integer(c_int64_t), value :: r0, c0, nr, nc, ld
      real(c_double), intent(in) :: src(ld, *)
    end function
  end interface
  public :: ooc_fill_fn, ooc_take_fn

  public :: ooc_abi_ok, ooc_version, ooc_status_name, ooc_exit_code
  public :: ooc_options_new, ooc_options_free, ooc_set
  public :: ooc_matrix_from_array, ooc_matrix_from_file, ooc_matrix_from_fill, &
            ooc_matrix_from_take, ooc_matrix_free
  public :: ooc_inv, ooc_solve, ooc_factor, ooc_solve_factor, ooc_logdet, ooc_gemm

  interface ooc_set
    module procedure set_i, set_i8, set_d, set_s
  end interface
  interface ooc_matrix_from_array
    module procedure from_array_d, from_array_s
  end interface
  interface ooc_inv
    module procedure inv_m, inv_d, inv_s, inv_f
  end interface
  interface ooc_solve
    module procedure solve_m, solve_d, solve_d1, solve_f
  end interface
  interface ooc_factor
    module procedure factor_m, factor_d, factor_f
  end interface
  interface ooc_solve_factor
    module procedure solve_factor_m, solve_factor_d, solve_factor_f
  end interface
  interface ooc_logdet
    module procedure logdet_m, logdet_d, logdet_f
  end interface
  interface ooc_gemm
    module procedure gemm_m, gemm_d, gemm_f
  end interface

  ! ---- the C functions (include/oocsolve.h) ----
  interface
    integer(c_int) function c_abi_version() bind(C, name="ooc_abi_version")
      import :: c_int
    end function
    type(c_ptr) function c_version() bind(C, name="ooc_version")
      import :: c_ptr
    end function
    type(c_ptr) function c_status_str(s) bind(C, name="ooc_status_str")
      import :: c_ptr, c_int
      integer(c_int), value :: s
    end function
    integer(c_int) function c_status_exit_code(s) bind(C, name="ooc_status_exit_code")
      import :: c_int
      integer(c_int), value :: s
    end function
    integer(c_int) function c_ctx_create(ctx) bind(C, name="ooc_ctx_create")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: ctx
    end function
    subroutine c_ctx_destroy(ctx) bind(C, name="ooc_ctx_destroy")
      import :: c_ptr
      type(c_ptr), value :: ctx
    end subroutine
    type(c_ptr) function c_ctx_error(ctx) bind(C, name="ooc_ctx_error")
      import :: c_ptr
      type(c_ptr), value :: ctx
    end function
    integer(c_int) function c_param_lookup(name) bind(C, name="ooc_param_lookup")
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
    end function
    integer(c_int) function c_opts_create(o) bind(C, name="ooc_opts_create")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: o
    end function
    subroutine c_opts_destroy(o) bind(C, name="ooc_opts_destroy")
      import :: c_ptr
      type(c_ptr), value :: o
    end subroutine
    integer(c_int) function c_opts_set_int(o, p, v) bind(C, name="ooc_opts_set_int")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: o
      integer(c_int), value :: p
      integer(c_int64_t), value :: v
    end function
    integer(c_int) function c_opts_set_double(o, p, v) bind(C, name="ooc_opts_set_double")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: o
      integer(c_int), value :: p
      real(c_double), value :: v
    end function
    integer(c_int) function c_opts_set_str(o, p, v) bind(C, name="ooc_opts_set_str")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: o
      integer(c_int), value :: p
      character(kind=c_char), intent(in) :: v(*)
    end function
    type(c_ptr) function c_opts_error(o) bind(C, name="ooc_opts_error")
      import :: c_ptr
      type(c_ptr), value :: o
    end function
    type(c_ptr) function c_report_create() bind(C, name="ooc_report_create")
      import :: c_ptr
    end function
    subroutine c_report_destroy(r) bind(C, name="ooc_report_destroy")
      import :: c_ptr
      type(c_ptr), value :: r
    end subroutine
    integer(c_int) function c_report_field_lookup(name) bind(C, name="ooc_report_field_lookup")
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: name(*)
    end function
    integer(c_int) function c_report_get_double(r, f, v) bind(C, name="ooc_report_get_double")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: r
      integer(c_int), value :: f
      real(c_double), intent(out) :: v
    end function
    integer(c_int) function c_matrix_file(ctx, spec, m) bind(C, name="ooc_matrix_file")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: ctx
      character(kind=c_char), intent(in) :: spec(*)
      type(c_ptr), intent(out) :: m
    end function
    integer(c_int) function c_matrix_array(ctx, data, dtype, rows, cols, ld, layout, m) &
        bind(C, name="ooc_matrix_array")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: ctx, data
      integer(c_int), value :: dtype, layout
      integer(c_int64_t), value :: rows, cols, ld
      type(c_ptr), intent(out) :: m
    end function
    integer(c_int) function c_matrix_callback(ctx, rows, cols, fill, take, user, m) &
        bind(C, name="ooc_matrix_callback")
      import :: c_int, c_ptr, c_int64_t, c_funptr
      type(c_ptr), value :: ctx, user
      integer(c_int64_t), value :: rows, cols
      type(c_funptr), value :: fill, take
      type(c_ptr), intent(out) :: m
    end function
    subroutine c_matrix_destroy(m) bind(C, name="ooc_matrix_destroy")
      import :: c_ptr
      type(c_ptr), value :: m
    end subroutine
    integer(c_int) function c_invert_m(ctx, a, x, o, r) bind(C, name="ooc_invert_m")
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, a, x, o, r
    end function
    integer(c_int) function c_solve_m(ctx, a, b, x, o, r) bind(C, name="ooc_solve_m")
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, a, b, x, o, r
    end function
    integer(c_int) function c_factor_m(ctx, a, l, o, r) bind(C, name="ooc_factor_m")
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, a, l, o, r
    end function
    integer(c_int) function c_solve_factor_m(ctx, l, b, x, o, r) bind(C, name="ooc_solve_factor_m")
      import :: c_int, c_ptr
      type(c_ptr), value :: ctx, l, b, x, o, r
    end function
    integer(c_int) function c_logdet_m(ctx, a, o, r, ld) bind(C, name="ooc_logdet_m")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: ctx, a, o, r
      real(c_double), intent(out) :: ld
    end function
    integer(c_int) function c_gemm_m(ctx, a, b, c0, c, alpha, beta, o, r) bind(C, name="ooc_gemm_m")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: ctx, a, b, c0, c, o, r
      real(c_double), value :: alpha, beta
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! ---- helpers ----

  ! A NUL-terminated copy of a Fortran string (trailing blanks dropped).
  function cstr(s) result(c)
    character(*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function

  ! A C string as a Fortran string (truncated to len(out)).
  subroutine fstr(p, out)
    type(c_ptr), intent(in) :: p
    character(*), intent(out) :: out
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    out = ""
    if (.not. c_associated(p)) return
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [max(n, 1)])
    do i = 1, min(n, len(out))
      out(i:i) = chars(i)
    end do
  end subroutine

  type(c_ptr) function optp(opts)
    type(ooc_options), intent(in), optional :: opts
    optp = c_null_ptr
    if (present(opts)) optp = opts%p
  end function

  ! A call's context and report; finish() hands back message and residual and frees both.
  subroutine begin(ctx, rep, st)
    type(c_ptr), intent(out) :: ctx, rep
    integer, intent(out) :: st
    st = c_ctx_create(ctx)
    rep = c_report_create()
    if (.not. c_associated(rep) .and. st == OOC_OK) st = OOC_ERR_NOMEM
    if (.not. ooc_abi_ok()) st = OOC_ERR_ARG ! refused: finish() says why
  end subroutine

  subroutine finish(ctx, rep, st, errmsg, residual)
    type(c_ptr), intent(in) :: ctx, rep
    integer, intent(in) :: st
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    integer(c_int) :: k
    if (present(errmsg)) then
      errmsg = ""
      if (st /= OOC_OK) call fstr(c_ctx_error(ctx), errmsg)
      if (.not. ooc_abi_ok()) write (errmsg, '(a, i0, a, i0, a)') "liboocsolve has ABI version ", &
        c_abi_version(), "; this Fortran module was compiled for ", OOC_FORTRAN_ABI, &
        ": rebuild it against the library"
    end if
    if (present(residual)) then
      residual = -1
      if (c_associated(rep)) k = c_report_get_double(rep, c_report_field_lookup(cstr("residual")), &
                                                     residual)
    end if
    call c_report_destroy(rep)
    call c_ctx_destroy(ctx)
  end subroutine

  ! ---- version, status ----

  ! .true. when the loaded library speaks the ABI this module was written for.
  logical function ooc_abi_ok()
    ooc_abi_ok = c_abi_version() == OOC_FORTRAN_ABI
  end function

  function ooc_version() result(v)
    character(len=32) :: v
    call fstr(c_version(), v)
  end function

  function ooc_status_name(st) result(v)
    integer, intent(in) :: st
    character(len=32) :: v
    call fstr(c_status_str(int(st, c_int)), v)
  end function

  integer function ooc_exit_code(st)
    integer, intent(in) :: st
    ooc_exit_code = c_status_exit_code(int(st, c_int))
  end function

  ! ---- options ----

  integer function ooc_options_new(opts)
    type(ooc_options), intent(out) :: opts
    ooc_options_new = c_opts_create(opts%p)
  end function

  subroutine ooc_options_free(opts)
    type(ooc_options), intent(inout) :: opts
    call c_opts_destroy(opts%p)
    opts%p = c_null_ptr
  end subroutine

  ! The parameter number of a name, or a failure with a message.
  integer function param(opts, name, errmsg, p)
    type(ooc_options), intent(in) :: opts
    character(*), intent(in) :: name
    character(*), intent(out), optional :: errmsg
    integer(c_int), intent(out) :: p
    param = OOC_OK
    if (present(errmsg)) errmsg = ""
    p = c_param_lookup(cstr(name))
    if (p == 0) then
      param = OOC_ERR_ARG
      if (present(errmsg)) errmsg = "unknown option '" // trim(name) // "'"
    else if (.not. c_associated(opts%p)) then
      param = OOC_ERR_ARG
      if (present(errmsg)) errmsg = "options not created (ooc_options_new)"
    end if
  end function

  integer function set_done(opts, st, errmsg)
    type(ooc_options), intent(in) :: opts
    integer(c_int), intent(in) :: st
    character(*), intent(out), optional :: errmsg
    set_done = st
    if (present(errmsg)) then
      errmsg = ""
      if (st /= OOC_OK) call fstr(c_opts_error(opts%p), errmsg)
    end if
  end function

  integer function set_i(opts, name, v, errmsg)
    type(ooc_options), intent(in) :: opts
    character(*), intent(in) :: name
    integer, intent(in) :: v
    character(*), intent(out), optional :: errmsg
    integer(c_int) :: p
    set_i = param(opts, name, errmsg, p)
    if (set_i /= OOC_OK) return
    set_i = set_done(opts, c_opts_set_int(opts%p, p, int(v, c_int64_t)), errmsg)
  end function

  integer function set_i8(opts, name, v, errmsg)
    type(ooc_options), intent(in) :: opts
    character(*), intent(in) :: name
    integer(c_int64_t), intent(in) :: v
    character(*), intent(out), optional :: errmsg
    integer(c_int) :: p
    set_i8 = param(opts, name, errmsg, p)
    if (set_i8 /= OOC_OK) return
    set_i8 = set_done(opts, c_opts_set_int(opts%p, p, v), errmsg)
  end function

  integer function set_d(opts, name, v, errmsg)
    type(ooc_options), intent(in) :: opts
    character(*), intent(in) :: name
    real(c_double), intent(in) :: v
    character(*), intent(out), optional :: errmsg
    integer(c_int) :: p
    set_d = param(opts, name, errmsg, p)
    if (set_d /= OOC_OK) return
    set_d = set_done(opts, c_opts_set_double(opts%p, p, v), errmsg)
  end function

  integer function set_s(opts, name, v, errmsg)
    type(ooc_options), intent(in) :: opts
    character(*), intent(in) :: name, v
    character(*), intent(out), optional :: errmsg
    integer(c_int) :: p
    set_s = param(opts, name, errmsg, p)
    if (set_s /= OOC_OK) return
    set_s = set_done(opts, c_opts_set_str(opts%p, p, cstr(v)), errmsg)
  end function

  ! ---- matrix handles ----

  ! Runs one constructor's status through a throwaway context's message.
  integer function made(ctx, st, errmsg)
    type(c_ptr), intent(in) :: ctx
    integer(c_int), intent(in) :: st
    character(*), intent(out), optional :: errmsg
    made = st
    if (present(errmsg)) then
      errmsg = ""
      if (st /= OOC_OK) call fstr(c_ctx_error(ctx), errmsg)
    end if
    call c_ctx_destroy(ctx)
  end function

  ! A Fortran array (column-major, read in place as an input, written in place as an output).
  integer function from_array_d(m, a, errmsg)
    type(ooc_matrix), intent(out) :: m
    real(c_double), intent(in), target, contiguous :: a(:, :)
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx
    from_array_d = c_ctx_create(ctx)
    if (from_array_d /= OOC_OK) return
    from_array_d = made(ctx, c_matrix_array(ctx, c_loc(a), 2_c_int, size(a, 1, c_int64_t), &
                        size(a, 2, c_int64_t), max(1_c_int64_t, size(a, 1, c_int64_t)), 0_c_int, &
                        m%p), errmsg)
  end function

  integer function from_array_s(m, a, errmsg)
    type(ooc_matrix), intent(out) :: m
    real(c_float), intent(in), target, contiguous :: a(:, :)
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx
    from_array_s = c_ctx_create(ctx)
    if (from_array_s /= OOC_OK) return
    from_array_s = made(ctx, c_matrix_array(ctx, c_loc(a), 1_c_int, size(a, 1, c_int64_t), &
                        size(a, 2, c_int64_t), max(1_c_int64_t, size(a, 1, c_int64_t)), 0_c_int, &
                        m%p), errmsg)
  end function

  integer function ooc_matrix_from_file(m, spec, errmsg)
    type(ooc_matrix), intent(out) :: m
    character(*), intent(in) :: spec
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx
    ooc_matrix_from_file = c_ctx_create(ctx)
    if (ooc_matrix_from_file /= OOC_OK) return
    ooc_matrix_from_file = made(ctx, c_matrix_file(ctx, cstr(spec), m%p), errmsg)
  end function

  ! An input given by a fill function (called for any block, possibly more than once).
  integer function ooc_matrix_from_fill(m, rows, cols, fill, user, errmsg)
    type(ooc_matrix), intent(out) :: m
    integer, intent(in) :: rows, cols
    procedure(ooc_fill_fn) :: fill
    type(c_ptr), intent(in) :: user
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx
    ooc_matrix_from_fill = c_ctx_create(ctx)
    if (ooc_matrix_from_fill /= OOC_OK) return
    ooc_matrix_from_fill = made(ctx, c_matrix_callback(ctx, int(rows, c_int64_t), &
                                int(cols, c_int64_t), c_funloc(fill), c_null_funptr, user, m%p), &
                                errmsg)
  end function

  ! An output handed to a take function, block by block, once verified.
  integer function ooc_matrix_from_take(m, rows, cols, take, user, errmsg)
    type(ooc_matrix), intent(out) :: m
    integer, intent(in) :: rows, cols
    procedure(ooc_take_fn) :: take
    type(c_ptr), intent(in) :: user
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx
    ooc_matrix_from_take = c_ctx_create(ctx)
    if (ooc_matrix_from_take /= OOC_OK) return
    ooc_matrix_from_take = made(ctx, c_matrix_callback(ctx, int(rows, c_int64_t), &
                                int(cols, c_int64_t), c_null_funptr, c_funloc(take), user, m%p), &
                                errmsg)
  end function

  subroutine ooc_matrix_free(m)
    type(ooc_matrix), intent(inout) :: m
    call c_matrix_destroy(m%p)
    m%p = c_null_ptr
  end subroutine

  subroutine free2(a, b)
    type(ooc_matrix), intent(inout) :: a, b
    call ooc_matrix_free(a)
    call ooc_matrix_free(b)
  end subroutine

  ! ---- inverse ----

  integer function inv_m(a, x, opts, errmsg, residual)
    type(ooc_matrix), intent(in) :: a, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(c_ptr) :: ctx, rep
    call begin(ctx, rep, inv_m)
    if (inv_m == OOC_OK) inv_m = c_invert_m(ctx, a%p, x%p, optp(opts), rep)
    call finish(ctx, rep, inv_m, errmsg, residual)
  end function

  integer function inv_d(a, x, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: a(:, :)
    real(c_double), intent(inout), target, contiguous :: x(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mx
    inv_d = from_array_d(ma, a, errmsg)
    if (inv_d == OOC_OK) inv_d = from_array_d(mx, x, errmsg)
    if (inv_d == OOC_OK) inv_d = inv_m(ma, mx, opts, errmsg, residual)
    call free2(ma, mx)
  end function

  integer function inv_s(a, x, opts, errmsg, residual)
    real(c_float), intent(in), target, contiguous :: a(:, :)
    real(c_float), intent(inout), target, contiguous :: x(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mx
    inv_s = from_array_s(ma, a, errmsg)
    if (inv_s == OOC_OK) inv_s = from_array_s(mx, x, errmsg)
    if (inv_s == OOC_OK) inv_s = inv_m(ma, mx, opts, errmsg, residual)
    call free2(ma, mx)
  end function

  integer function inv_f(a, x, opts, errmsg, residual)
    character(*), intent(in) :: a, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mx
    inv_f = ooc_matrix_from_file(ma, a, errmsg)
    if (inv_f == OOC_OK) inv_f = ooc_matrix_from_file(mx, x, errmsg)
    if (inv_f == OOC_OK) inv_f = inv_m(ma, mx, opts, errmsg, residual)
    call free2(ma, mx)
  end function

  ! ---- solve ----

  integer function solve_m(a, b, x, opts, errmsg, residual)
    type(ooc_matrix), intent(in) :: a, b, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(c_ptr) :: ctx, rep
    call begin(ctx, rep, solve_m)
    if (solve_m == OOC_OK) solve_m = c_solve_m(ctx, a%p, b%p, x%p, optp(opts), rep)
    call finish(ctx, rep, solve_m, errmsg, residual)
  end function

  integer function solve_d(a, b, x, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: a(:, :), b(:, :)
    real(c_double), intent(inout), target, contiguous :: x(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mb, mx
    solve_d = from_array_d(ma, a, errmsg)
    if (solve_d == OOC_OK) solve_d = from_array_d(mb, b, errmsg)
    if (solve_d == OOC_OK) solve_d = from_array_d(mx, x, errmsg)
    if (solve_d == OOC_OK) solve_d = solve_m(ma, mb, mx, opts, errmsg, residual)
    call free2(ma, mb)
    call ooc_matrix_free(mx)
  end function

  ! One right-hand side as a vector.
  integer function solve_d1(a, b, x, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: a(:, :)
    real(c_double), intent(in), target, contiguous :: b(:)
    real(c_double), intent(inout), target, contiguous :: x(:)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    real(c_double), pointer :: b2(:, :), x2(:, :)
    call c_f_pointer(c_loc(b), b2, [size(b), 1])
    call c_f_pointer(c_loc(x), x2, [size(x), 1])
    solve_d1 = solve_d(a, b2, x2, opts, errmsg, residual)
  end function

  integer function solve_f(a, b, x, opts, errmsg, residual)
    character(*), intent(in) :: a, b, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mb, mx
    solve_f = ooc_matrix_from_file(ma, a, errmsg)
    if (solve_f == OOC_OK) solve_f = ooc_matrix_from_file(mb, b, errmsg)
    if (solve_f == OOC_OK) solve_f = ooc_matrix_from_file(mx, x, errmsg)
    if (solve_f == OOC_OK) solve_f = solve_m(ma, mb, mx, opts, errmsg, residual)
    call free2(ma, mb)
    call ooc_matrix_free(mx)
  end function

  ! ---- Cholesky factor, solve with it ----

  integer function factor_m(a, l, opts, errmsg, residual)
    type(ooc_matrix), intent(in) :: a, l
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(c_ptr) :: ctx, rep
    call begin(ctx, rep, factor_m)
    if (factor_m == OOC_OK) factor_m = c_factor_m(ctx, a%p, l%p, optp(opts), rep)
    call finish(ctx, rep, factor_m, errmsg, residual)
  end function

  integer function factor_d(a, l, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: a(:, :)
    real(c_double), intent(inout), target, contiguous :: l(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, ml
    factor_d = from_array_d(ma, a, errmsg)
    if (factor_d == OOC_OK) factor_d = from_array_d(ml, l, errmsg)
    if (factor_d == OOC_OK) factor_d = factor_m(ma, ml, opts, errmsg, residual)
    call free2(ma, ml)
  end function

  integer function factor_f(a, l, opts, errmsg, residual)
    character(*), intent(in) :: a, l
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, ml
    factor_f = ooc_matrix_from_file(ma, a, errmsg)
    if (factor_f == OOC_OK) factor_f = ooc_matrix_from_file(ml, l, errmsg)
    if (factor_f == OOC_OK) factor_f = factor_m(ma, ml, opts, errmsg, residual)
    call free2(ma, ml)
  end function

  integer function solve_factor_m(l, b, x, opts, errmsg, residual)
    type(ooc_matrix), intent(in) :: l, b, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(c_ptr) :: ctx, rep
    call begin(ctx, rep, solve_factor_m)
    if (solve_factor_m == OOC_OK) &
      solve_factor_m = c_solve_factor_m(ctx, l%p, b%p, x%p, optp(opts), rep)
    call finish(ctx, rep, solve_factor_m, errmsg, residual)
  end function

  integer function solve_factor_d(l, b, x, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: l(:, :), b(:, :)
    real(c_double), intent(inout), target, contiguous :: x(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ml, mb, mx
    solve_factor_d = from_array_d(ml, l, errmsg)
    if (solve_factor_d == OOC_OK) solve_factor_d = from_array_d(mb, b, errmsg)
    if (solve_factor_d == OOC_OK) solve_factor_d = from_array_d(mx, x, errmsg)
    if (solve_factor_d == OOC_OK) solve_factor_d = solve_factor_m(ml, mb, mx, opts, errmsg, residual)
    call free2(ml, mb)
    call ooc_matrix_free(mx)
  end function

  integer function solve_factor_f(l, b, x, opts, errmsg, residual)
    character(*), intent(in) :: l, b, x
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ml, mb, mx
    solve_factor_f = ooc_matrix_from_file(ml, l, errmsg)
    if (solve_factor_f == OOC_OK) solve_factor_f = ooc_matrix_from_file(mb, b, errmsg)
    if (solve_factor_f == OOC_OK) solve_factor_f = ooc_matrix_from_file(mx, x, errmsg)
    if (solve_factor_f == OOC_OK) solve_factor_f = solve_factor_m(ml, mb, mx, opts, errmsg, residual)
    call free2(ml, mb)
    call ooc_matrix_free(mx)
  end function

  ! ---- log-determinant ----

  integer function logdet_m(a, logdet, opts, errmsg)
    type(ooc_matrix), intent(in) :: a
    real(c_double), intent(out) :: logdet
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    type(c_ptr) :: ctx, rep
    call begin(ctx, rep, logdet_m)
    logdet = 0
    if (logdet_m == OOC_OK) logdet_m = c_logdet_m(ctx, a%p, optp(opts), rep, logdet)
    call finish(ctx, rep, logdet_m, errmsg)
  end function

  integer function logdet_d(a, logdet, opts, errmsg)
    real(c_double), intent(in), target, contiguous :: a(:, :)
    real(c_double), intent(out) :: logdet
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    type(ooc_matrix) :: ma
    logdet = 0
    logdet_d = from_array_d(ma, a, errmsg)
    if (logdet_d == OOC_OK) logdet_d = logdet_m(ma, logdet, opts, errmsg)
    call ooc_matrix_free(ma)
  end function

  integer function logdet_f(a, logdet, opts, errmsg)
    character(*), intent(in) :: a
    real(c_double), intent(out) :: logdet
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    type(ooc_matrix) :: ma
    logdet = 0
    logdet_f = ooc_matrix_from_file(ma, a, errmsg)
    if (logdet_f == OOC_OK) logdet_f = logdet_m(ma, logdet, opts, errmsg)
    call ooc_matrix_free(ma)
  end function

  ! ---- product: C = alpha A B + beta C0 (c0 absent: alpha A B) ----

  integer function gemm_m(a, b, c, alpha, beta, c0, opts, errmsg, residual)
    type(ooc_matrix), intent(in) :: a, b, c
    real(c_double), intent(in) :: alpha, beta
    type(ooc_matrix), intent(in), optional :: c0
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(c_ptr) :: ctx, rep, pc0
    pc0 = c_null_ptr
    if (present(c0)) pc0 = c0%p
    call begin(ctx, rep, gemm_m)
    if (gemm_m == OOC_OK) gemm_m = c_gemm_m(ctx, a%p, b%p, pc0, c%p, alpha, beta, optp(opts), rep)
    call finish(ctx, rep, gemm_m, errmsg, residual)
  end function

  integer function gemm_d(a, b, c, alpha, beta, c0, opts, errmsg, residual)
    real(c_double), intent(in), target, contiguous :: a(:, :), b(:, :)
    real(c_double), intent(inout), target, contiguous :: c(:, :)
    real(c_double), intent(in) :: alpha, beta
    real(c_double), intent(in), target, contiguous, optional :: c0(:, :)
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mb, mc, m0
    gemm_d = from_array_d(ma, a, errmsg)
    if (gemm_d == OOC_OK) gemm_d = from_array_d(mb, b, errmsg)
    if (gemm_d == OOC_OK) gemm_d = from_array_d(mc, c, errmsg)
    if (gemm_d == OOC_OK .and. present(c0)) gemm_d = from_array_d(m0, c0, errmsg)
    if (gemm_d == OOC_OK) then
      if (present(c0)) then
        gemm_d = gemm_m(ma, mb, mc, alpha, beta, m0, opts, errmsg, residual)
      else
        gemm_d = gemm_m(ma, mb, mc, alpha, beta, opts=opts, errmsg=errmsg, residual=residual)
      end if
    end if
    call free2(ma, mb)
    call free2(mc, m0)
  end function

  integer function gemm_f(a, b, c, alpha, beta, c0, opts, errmsg, residual)
    character(*), intent(in) :: a, b, c
    real(c_double), intent(in) :: alpha, beta
    character(*), intent(in), optional :: c0
    type(ooc_options), intent(in), optional :: opts
    character(*), intent(out), optional :: errmsg
    real(c_double), intent(out), optional :: residual
    type(ooc_matrix) :: ma, mb, mc, m0
    gemm_f = ooc_matrix_from_file(ma, a, errmsg)
    if (gemm_f == OOC_OK) gemm_f = ooc_matrix_from_file(mb, b, errmsg)
    if (gemm_f == OOC_OK) gemm_f = ooc_matrix_from_file(mc, c, errmsg)
    if (gemm_f == OOC_OK .and. present(c0)) gemm_f = ooc_matrix_from_file(m0, c0, errmsg)
    if (gemm_f == OOC_OK) then
      if (present(c0)) then
        gemm_f = gemm_m(ma, mb, mc, alpha, beta, m0, opts, errmsg, residual)
      else
        gemm_f = gemm_m(ma, mb, mc, alpha, beta, opts=opts, errmsg=errmsg, residual=residual)
      end if
    end if
    call free2(ma, mb)
    call free2(mc, m0)
  end function

end module oocsolve
