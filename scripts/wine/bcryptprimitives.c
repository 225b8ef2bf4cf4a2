/* ProcessPrng, the one function of bcryptprimitives.dll that Rust's standard
 * library imports on Windows. Wine 8 (Debian 12's) lacks the DLL; Windows 10
 * and later, and Wine 9, have it. Only the Windows smoke test under wine
 * (`make test-windows`) puts this stand-in into its wine prefix. It draws
 * from RtlGenRandom (advapi32's SystemFunction036), Windows' own CSPRNG. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
