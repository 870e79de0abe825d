//////////////////////////////////////////////////////////////////////
// VERSION NUMBER ERROR:
// Setting ProductVersion[] = "2.0.3.2.1" for the first release of
// ardopcf was a mistake.  This was due to a bug and misunderstanding
// of the ardop version numbering scheme.  So ardopcf v1.0.4.1.1 comes
// after and replaces v2.0.3.2.1
const char ProductVersion[] = "1.0.4.1.3";
