/* atr_err.c - see atr_err.h. */
#include "atr_err.h"

const char *atr_errstr(int err)
{
	switch (err) {
#define ATR_ERR_STR_(NAME, value, text)                                                            \
	case ATR_E_##NAME:                                                                         \
		return text;
		ATR_ERRORS(ATR_ERR_STR_)
#undef ATR_ERR_STR_
	}
	return "unknown error";
}
