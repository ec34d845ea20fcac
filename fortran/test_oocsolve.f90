! test_oocsolve.f90: the Fortran module against the library (ctest fortran_oocsolve). Each check
! prints PASS/FAIL with what it measured; the program stops with code 1 if any failed.
! Covers: the ABI check, options (set, refused with a message), every call on Fortran arrays
! (inverse float64 and float32, solve with a matrix and a vector, factor, solve with the factor,
! logdet, product with and without C0) against LAPACK-style residual ratios and intrinsics, the
! input never modified, files (an array written to a file, read back and inverted again), fill
! and take callbacks, and a singular matrix's status, exit code and message. (The README's
! Fortran quick start is compiled and run from README.md itself: fortran/CMakeLists.txt.)
module test_cb
  use iso_c_binding
  implicit none
  integer, parameter :: NC = 70
  real(c_double), target :: collected(NC, NC)
  integer :: fills = 0, takes = 0
contains
  ! A(i, j) of the test's matrix, 0-based: diagonally dominant, nonsymmetric
  pure real(c_double) function aij(i, j)
    integer(c_int64_t), intent(in) :: i, j
    aij = 1.0d0 / (1.0d0 + abs(i - j)) + merge(real(NC, c_double), 0.0d0, i == j) + 0.01d0 * i
  end function

  integer(c_int) function fill(user, r0, c0, nr, nc, dst, ld) bind(C)
    type(c_ptr), value :: user
    integer(c_int64_t), value :: r0, c0, nr, nc, ld
    real(c_double) :: dst(ld, *)
    integer(c_int64_t) :: i, j
    fills = fills + 1
    do j = 1, nc
      do i = 1, nr
        dst(i, j) = aij(r0 + i - 1, c0 + j - 1)
      end do
    end do
    fill = 0
  end function

  integer(c_int) function take(user, r0, c0, nr, nc, src, ld) bind(C)
    type(c_ptr), value :: user
    integer(c_int64_t), value :: r0, c0, nr, nc, ld
    real(c_double), intent(in) :: src(ld, *)
    takes = takes + 1
    collected(r0 + 1:r0 + nr, c0 + 1:c0 + nc) = src(1:nr, 1:nc)
    take = 0
  end function
end module

program test_oocsolve
  use oocsolve
  use test_cb
  use iso_c_binding
  implicit none
  integer, parameter :: n = 90, m = 4
  real(c_double), allocatable :: a(:, :), x(:, :), a0(:, :), b(:, :), xs(:, :), s(:, :), l(:, :)
  real(c_double), allocatable :: c(:, :), c0(:, :), bv(:), xv(:), back(:, :)
  real(c_float), allocatable :: a4(:, :), x4(:, :)
  real(c_double) :: res, ld, eps
  type(ooc_options) :: opts
  type(ooc_matrix) :: ha, hx
  character(len=512) :: msg
  character(len=256) :: dir
  integer :: st, i, j, failures
  failures = 0
  eps = epsilon(1.0d0)

  call check("ABI version matches the module", ooc_abi_ok())
  call check("version string", len_trim(ooc_version()) >= 5)

  call get_environment_variable("OOC_TEST_DIR", dir)          ! ctest: the build directory
  if (len_trim(dir) == 0) call get_environment_variable("TMPDIR", dir)
  if (len_trim(dir) == 0) dir = "/tmp"

  ! ---- options ----
  st = ooc_options_new(opts)
  st = ooc_set(opts, "tile", 32, msg)
  call check("set tile", st == OOC_OK)
  st = ooc_set(opts, "device", "cpu", msg)
  call check("set device by name", st == OOC_OK)
  st = ooc_set(opts, "check", "full", msg)
  st = ooc_set(opts, "check_threshold", 30.0d0, msg)
  call check("set a double", st == OOC_OK)
  st = ooc_set(opts, "tile", -3, msg)
  call check("tile -3 refused with a message", st == OOC_ERR_ARG .and. index(msg, "outside") > 0)
  st = ooc_set(opts, "no_such_option", 1, msg)
  call check("unknown option refused", st == OOC_ERR_ARG .and. index(msg, "unknown option") > 0)
  st = ooc_set(opts, "method", "qr", msg)
  call check("bad method name refused", st == OOC_ERR_ARG .and. index(msg, "'qr'") > 0)

  ! ---- inverse on arrays ----
  allocate (a(n, n), x(n, n), a0(n, n))
  do j = 1, n
    do i = 1, n
      a(i, j) = 1.0d0 / (1.0d0 + abs(i - j)) + merge(real(n, 8), 0d0, i == j) + 0.01d0 * i
    end do
  end do
  a0 = a
  st = ooc_inv(a, x, opts, msg, res)
  call report_st("inverse, float64 arrays", st, msg)
  call check("inverse ratio < 30", st == OOC_OK .and. inv_ratio(a, x, eps) < 30 .and. res < 30)
  call check("input not modified", all(a == a0))

  allocate (a4(n, n), x4(n, n))
  a4 = real(a, c_float)
  st = ooc_inv(a4, x4, opts, msg)
  call report_st("inverse, float32 arrays", st, msg)
  call check("float32 inverse ratio < 30", inv_ratio(real(a4, 8), real(x4, 8), &
             real(epsilon(1.0), 8)) < 30)

  ! ---- solve (matrix and vector right-hand sides) ----
  allocate (b(n, m), xs(n, m), bv(n), xv(n))
  do j = 1, m
    do i = 1, n
      b(i, j) = sin(0.3d0 * i + j)
    end do
  end do
  st = ooc_solve(a, b, xs, opts, msg, res)
  call report_st("solve", st, msg)
  call check("solve ratio < 16", solve_ratio(a, xs, b, eps) < 16 .and. res < 16)
  bv = b(:, 1)
  st = ooc_solve(a, bv, xv, opts, msg)
  call check("solve with a vector", st == OOC_OK .and. maxval(abs(xv - xs(:, 1))) <= &
             1d-12 * maxval(abs(xs)))

  ! ---- Cholesky: factor, solve with it, logdet ----
  allocate (s(n, n), l(n, n))
  s = matmul(transpose(a), a) / n
  st = ooc_factor(s, l, opts, msg, res)
  call report_st("factor", st, msg)
  call check("L L^T = S", maxval(abs(matmul(l, transpose(l)) - s)) <= 1d-12 * maxval(abs(s)))
  call check("L lower triangular", all([(all(l(1:j - 1, j) == 0), j = 2, n)]))
  st = ooc_solve_factor(l, b, xs, opts, msg)
  call report_st("solve with the factor", st, msg)
  call check("solve_factor ratio < 16", solve_ratio(s, xs, b, eps) < 16)
  st = ooc_logdet(s, ld, opts, msg)
  call report_st("logdet", st, msg)
  call check("logdet = 2 sum log diag L", abs(ld - 2 * sum([(log(l(j, j)), j = 1, n)])) <= &
             1d-10 * abs(ld))

  ! ---- product ----
  allocate (c(n, m), c0(n, m))
  c0 = 1
  st = ooc_gemm(a, b, c, 2.0d0, -0.5d0, c0, opts, msg)
  call report_st("gemm with C0", st, msg)
  call check("gemm = 2 A B - 0.5 C0", maxval(abs(c - (2 * matmul(a, b) - 0.5d0 * c0))) <= &
             1d-12 * maxval(abs(c)))
  st = ooc_gemm(a, b, c, 1.0d0, 0.0d0, opts=opts, errmsg=msg)
  call check("gemm without C0", st == OOC_OK .and. maxval(abs(c - matmul(a, b))) <= &
             1d-12 * maxval(abs(c)))

  ! ---- files: the inverse written to a file, inverted again from the file ----
  call ooc_matrix_free(hx)
  st = ooc_matrix_from_array(ha, a)
  st = ooc_matrix_from_file(hx, trim(dir) // "/f_inv.h5:/X")
  st = ooc_set(opts, "force", 1)
  st = ooc_inv(ha, hx, opts, msg)
  call report_st("inverse, array -> file", st, msg)
  call ooc_matrix_free(ha)
  call ooc_matrix_free(hx)
  st = ooc_inv(trim(dir) // "/f_inv.h5:/X", trim(dir) // "/f_back.h5:/A", opts, msg)
  call report_st("inverse, file -> file", st, msg)
  allocate (back(n, n))
  st = ooc_matrix_from_file(ha, trim(dir) // "/f_back.h5:/A")
  st = ooc_matrix_from_array(hx, back)
  st = ooc_inv(ha, hx, opts, msg)   ! (A^-1)^-1 read back once more, into an array
  call report_st("inverse, file -> array", st, msg)
  call check("inverse of the inverse of the inverse = inverse", &
             maxval(abs(back - x)) <= 1d-9 * maxval(abs(x)))
  call ooc_matrix_free(ha)
  call ooc_matrix_free(hx)

  ! ---- callbacks: A from a fill function, the inverse to a take function ----
  st = ooc_matrix_from_fill(ha, NC, NC, fill, c_null_ptr)
  call check("fill handle", st == OOC_OK)
  st = ooc_matrix_from_take(hx, NC, NC, take, c_null_ptr)
  call check("take handle", st == OOC_OK)
  collected = 0
  st = ooc_inv(ha, hx, opts, msg, res)
  call report_st("inverse, fill -> take", st, msg)
  block
    real(c_double) :: ac(NC, NC)
    integer(c_int64_t) :: ii, jj
    do jj = 1, NC
      do ii = 1, NC
        ac(ii, jj) = aij(ii - 1, jj - 1)
      end do
    end do
    call check("callback inverse ratio < 30", inv_ratio(ac, collected, eps) < 30)
  end block
  call check("the check asked fill again, take got tiles", fills > 3 .and. takes == 9)
  call ooc_matrix_free(ha)
  call ooc_matrix_free(hx)

  ! ---- errors: a singular matrix ----
  a = 1
  st = ooc_inv(a, x, opts, msg)
  call check("singular: status, exit code 4, message", st == OOC_ERR_SINGULAR .and. &
             ooc_exit_code(st) == 4 .and. index(msg, "singular") > 0 .and. &
             trim(ooc_status_name(st)) == "OOC_ERR_SINGULAR")
  call check("the failed call left NaN in x", all(x /= x))

  call ooc_options_free(opts)
  ! the main program's allocatables are never freed implicitly (the ASan pass counts them)
  deallocate (a, x, a0, b, xs, s, l, c, c0, bv, xv, back, a4, x4)
  if (failures > 0) then
    print '(i0, a)', failures, " check(s) FAILED"
    stop 1
  end if
  print '(a)', "all checks passed"

contains

  subroutine check(what, ok)
    character(*), intent(in) :: what
    logical, intent(in) :: ok
    if (ok) then
      print '(a, a)', "PASS ", what
    else
      print '(a, a)', "FAIL ", what
      failures = failures + 1
    end if
  end subroutine

  subroutine report_st(what, st, msg)
    character(*), intent(in) :: what, msg
    integer, intent(in) :: st
    if (st /= OOC_OK) print '(a, a, a, i0, a, a)', "  ", what, ": status ", st, ": ", trim(msg)
    call check(what // " returns OOC_OK", st == OOC_OK)
  end subroutine

  function eye(k) result(e)
    integer, intent(in) :: k
    real(8) :: e(k, k)
    integer :: q
    e = 0
    do q = 1, k
      e(q, q) = 1
    end do
  end function

  ! ||I - A X||_1 / (n ||A||_1 ||X||_1 eps)
  real(8) function inv_ratio(a, x, eps)
    real(8), intent(in) :: a(:, :), x(:, :), eps
    integer :: k
    k = size(a, 1)
    inv_ratio = maxval(sum(abs(eye(k) - matmul(a, x)), 1)) / &
                (k * maxval(sum(abs(a), 1)) * maxval(sum(abs(x), 1)) * eps)
  end function

  ! max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n)
  real(8) function solve_ratio(a, x, b, eps)
    real(8), intent(in) :: a(:, :), x(:, :), b(:, :), eps
    real(8) :: r(size(b, 1), size(b, 2)), an
    integer :: q
    r = matmul(a, x) - b
    an = maxval(sum(abs(a), 2))
    solve_ratio = 0
    do q = 1, size(b, 2)
      solve_ratio = max(solve_ratio, maxval(abs(r(:, q))) / (eps * (an * maxval(abs(x(:, q))) + &
                        maxval(abs(b(:, q)))) * size(a, 1)))
    end do
  end function

end program
