"""The optional password in front of every page (RAG_APP_PASSWORD), for a demo on a network."""

from __future__ import annotations

import hmac

import streamlit as st

from ui.i18n import _

PASSED = "_app_password_ok"


def password_gate(password: str | None) -> bool:
    """True when the visitor may see the app: no password is set, or this session typed it. Otherwise
    draws the password form (the comparison takes the same time whatever was typed)."""
    if not password or st.session_state.get(PASSED):
        return True
    st.title("RAG Knowledge Lab")
    with st.form("app_password_form"):
        typed = st.text_input(_("Password"), type="password", key="app_password_typed")
        sent = st.form_submit_button(_("Open"), type="primary")
    if sent:
        if hmac.compare_digest(typed.encode(), password.encode()):
            st.session_state[PASSED] = True
            st.session_state.pop("app_password_typed", None)
            st.rerun()
        st.error(_("Wrong password."), icon="🔒")
    return False
