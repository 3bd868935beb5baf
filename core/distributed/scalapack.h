// The BLACS and ScaLAPACK entry points matrixd calls (Debian's libscalapack-openmpi ships no C
// header). Fortran calling convention: every argument by pointer, 32-bit integers.
#ifndef MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_
#define MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_

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
void pdgetrf_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca,
              int* ipiv, int* info);
void pdgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* ia,
              const int* ja, const int* desca, const int* ipiv, double* b, const int* ib,
              const int* jb, const int* descb, int* info);
}

#endif  // MATRIXD_CORE_DISTRIBUTED_SCALAPACK_H_
