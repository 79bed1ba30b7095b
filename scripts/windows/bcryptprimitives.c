/* A stand-in for Windows' bcryptprimitives.dll, for Debian's wine 8.0,
 * which lacks it (wine has it from 8.13). Rust's standard library (1.78
 * and later) takes its random numbers from ProcessPrng in that DLL; this
 * one answers from RtlGenRandom (SystemFunction036 in advapi32), which
 * wine has. Built by scripts/windows-env with mingw and copied into the
 * test prefix's system32; never shipped.
 *
 *   x86_64-w64-mingw32-gcc -O2 -shared -o bcryptprimitives.dll \
 *       bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
