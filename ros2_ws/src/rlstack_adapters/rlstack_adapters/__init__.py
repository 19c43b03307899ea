"""rlstack_adapters: rlstack's command topics -> the interfaces real robot controllers take."""
