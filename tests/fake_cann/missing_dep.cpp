// A library the fake_cann_brokendep runtime needs and that is not on the
// loader's path: a CANN install whose set_env.sh was not sourced.
extern "C" int xb_fake_missing_dependency() { return 0; }
