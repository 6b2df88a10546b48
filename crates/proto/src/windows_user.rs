//! Who owns what, on Windows: the equivalent of the Unix uid checks. A user is known by their
//! security identifier (SID), compared as its string form (`S-1-5-21-...`). The daemon's pipe
//! is trusted when the process serving it runs as this user, and its folder when this user
//! owns it.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, ERROR_SUCCESS, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, GetNamedSecurityInfoW, GetSecurityInfo, SE_FILE_OBJECT,
    SE_KERNEL_OBJECT,
};
use windows_sys::Win32::Security::{
    GetAce, GetTokenInformation, TokenUser, ACCESS_ALLOWED_ACE, ACE_HEADER, ACL,
    DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY,
    TOKEN_USER,
};
use windows_sys::Win32::System::SystemServices::ACCESS_ALLOWED_ACE_TYPE;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

/// A handle closed when dropped.
struct Owned(HANDLE);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the handle was returned open by the call that made this value, and is closed
        // once, here.
        unsafe { CloseHandle(self.0) };
    }
}

/// The SID this process runs as.
pub fn current_user_sid() -> io::Result<String> {
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing and is always
    // valid for the calling process.
    let process = unsafe { GetCurrentProcess() };
    token_user_sid(process)
}

/// The SID the process `pid` runs as (the daemon serving a pipe, say).
pub fn process_user_sid(pid: u32) -> io::Result<String> {
    // SAFETY: plain call; a null handle is an error, checked below.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return Err(io::Error::last_os_error());
    }
    let process = Owned(process);
    token_user_sid(process.0)
}

/// The SID of the user of `process`'s access token.
fn token_user_sid(process: HANDLE) -> io::Result<String> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: `process` is a valid process handle and `token` a place for the result.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let token = Owned(token);
    let mut needed = 0u32;
    // SAFETY: asking for the size only (null buffer, length 0) is the documented first call.
    unsafe { GetTokenInformation(token.0, TokenUser, std::ptr::null_mut(), 0, &mut needed) };
    if needed == 0 {
        return Err(io::Error::last_os_error());
    }
    // u64 words: TOKEN_USER holds pointers and must be aligned as they are.
    let mut buffer = vec![0u64; (needed as usize).div_ceil(8)];
    // SAFETY: the buffer holds at least `needed` bytes, aligned for TOKEN_USER.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buffer.as_mut_ptr().cast(),
            needed,
            &mut needed,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so the buffer starts with a TOKEN_USER whose SID points into
    // the same buffer, alive until the end of this function.
    let user = unsafe { &*buffer.as_ptr().cast::<TOKEN_USER>() };
    sid_string(user.User.Sid)
}

/// The user who owns `path` (a file or a folder).
pub fn owner_sid(path: &Path) -> io::Result<String> {
    let wide: Vec<u16> = OsStr::new(path).encode_wide().chain(Some(0)).collect();
    let mut owner: PSID = std::ptr::null_mut();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `wide` is a NUL-terminated path; owner and descriptor receive pointers into one
    // allocation, freed below with LocalFree.
    let status = unsafe {
        GetNamedSecurityInfoW(
            wide.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &mut owner,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    if status != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(status as i32));
    }
    let sid = sid_string(owner);
    // SAFETY: the descriptor was allocated by GetNamedSecurityInfoW and is freed once.
    unsafe { LocalFree(descriptor) };
    sid
}

/// Who else than `me` the access list of the pipe (or any kernel object) behind `handle`
/// lets in: the SIDs of its entries that allow access, `"everyone"` when it has no list at all.
/// Empty when `me` alone may open it, as the daemon makes its pipe: the equivalent of a Unix
/// socket's mode 0600.
pub fn others_allowed(
    handle: std::os::windows::io::BorrowedHandle<'_>,
    me: &str,
) -> io::Result<Vec<String>> {
    use std::os::windows::io::AsRawHandle;
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: a valid handle; `dacl` points into `descriptor`, one allocation freed below.
    let status = unsafe {
        GetSecurityInfo(
            handle.as_raw_handle(),
            SE_KERNEL_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut descriptor,
        )
    };
    if status != ERROR_SUCCESS {
        return Err(io::Error::from_raw_os_error(status as i32));
    }
    let others = if dacl.is_null() {
        Ok(vec!["everyone".to_string()])
    } else {
        allowed_sids(dacl).map(|sids| sids.into_iter().filter(|s| s != me).collect())
    };
    // SAFETY: allocated by GetSecurityInfo, freed once; `dacl` is not read after this.
    unsafe { LocalFree(descriptor) };
    others
}

/// The SIDs an access list's allowing entries name.
fn allowed_sids(dacl: *mut ACL) -> io::Result<Vec<String>> {
    let mut sids = Vec::new();
    // SAFETY: `dacl` is a valid ACL returned by GetSecurityInfo and alive during this call.
    let count = unsafe { (*dacl).AceCount };
    for i in 0..u32::from(count) {
        let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `i` is below the list's entry count.
        if unsafe { GetAce(dacl, i, &mut ace) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: every entry starts with an ACE_HEADER.
        let header = unsafe { &*ace.cast::<ACE_HEADER>() };
        if u32::from(header.AceType) != ACCESS_ALLOWED_ACE_TYPE {
            continue;
        }
        // SAFETY: an entry of this type is an ACCESS_ALLOWED_ACE, its SID starting at
        // `SidStart` and lying within the entry.
        let sid = unsafe { std::ptr::addr_of!((*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart) };
        sids.push(sid_string(sid.cast_mut().cast())?);
    }
    Ok(sids)
}

/// A SID as text.
fn sid_string(sid: PSID) -> io::Result<String> {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` points to a valid SID; `text` receives a LocalAlloc'd wide string.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the string is NUL-terminated; its length is read before it is freed.
    let s = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
    };
    // SAFETY: allocated by ConvertSidToStringSidW, freed once.
    unsafe { LocalFree(text.cast()) };
    Ok(s)
}
