// The BLACS and ScaLAPACK entry points matrixd calls (Debian's libscalapack-openmpi ships no C
// header). Fortran calling convention: every argument by pointer, 32-bit integers.
#ifndef MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_
#define MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_

#include <complex>

// Fortran COMPLEX and COMPLEX*16 are laid out as std::complex<float> and std::complex<double>.
extern "C" {
void Cblacs_get(int context, int request, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
             const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
             float* c, const int* ic, const int* jc, const int* descc);
void pcgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const std::complex<float>* alpha, const std::complex<float>* a, const int* ia,
             const int* ja, const int* desca, const std::complex<float>* b, const int* ib,
             const int* jb, const int* descb, const std::complex<float>* beta,
             std::complex<float>* c, const int* ic, const int* jc, const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const std::complex<double>* alpha, const std::complex<double>* a, const int* ia,
             const int* ja, const int* desca, const std::complex<double>* b, const int* ib,
             const int* jb, const int* descb, const std::complex<double>* beta,
             std::complex<double>* c, const int* ic, const int* jc, const int* descc);
void pzgetrf_(const int* m, const int* n, std::complex<double>* a, const int* ia, const int* ja,
              const int* desca, int* ipiv, int* info);
void pzgetrs_(const char* trans, const int* n, const int* nrhs, const std::complex<double>* a,
              const int* ia, const int* ja, const int* desca, const int* ipiv,
              std::complex<double>* b, const int* ib, const int* jb, const int* descb, int* info);
void pdgetrf_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca,
              int* ipiv, int* info);
void pdgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* ia,
              const int* ja, const int* desca, const int* ipiv, double* b, const int* ib,
              const int* jb, const int* descb, int* info);
}

#endif  // MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_
