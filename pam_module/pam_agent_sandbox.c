/* SPDX-License-Identifier: BSD-3-Clause */
/* pam_agent_sandbox: placeholder until the PAM issue lands. */
#define PAM_SM_ACCOUNT
#define PAM_SM_SESSION
#include <security/pam_modules.h>

#define SBX_EXPORT __attribute__((visibility("default")))

SBX_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv);
SBX_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv);
SBX_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv);

int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return PAM_IGNORE;
}

int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return PAM_IGNORE;
}

int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return PAM_IGNORE;
}
