/*
 * A stand-in for Windows' bcryptprimitives.dll, for running the Windows tests under Wine
 * (scripts/windows.sh). Every Go program since Go 1.22 loads the DLL at start for its
 * ProcessPrng, and Debian 12's Wine (8.0) has no such DLL, so a Go program cannot even start
 * there. ProcessPrng fills the buffer from the system's generator; RtlGenRandom (advapi32's
 * SystemFunction036) is that generator on Wine. Nothing here ships with sessionmem.
 */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!RtlGenRandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
